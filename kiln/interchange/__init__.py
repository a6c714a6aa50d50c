"""Interchange with other tools: ONNX export and import (the optional extra `kiln[onnx]`) and
the networkx view of a program (`kiln[networkx]`)."""

from .nx_view import to_networkx
from .onnx_export import export_onnx, to_onnx
from .onnx_import import import_onnx
from .onnx_import_rules import SUPPORTED

__all__ = ["SUPPORTED", "export_onnx", "import_onnx", "to_networkx", "to_onnx"]
