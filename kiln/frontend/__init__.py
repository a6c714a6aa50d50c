"""The user API: sources, op functions, operators and methods (installed here on Symbol and on
eager's Tensor, which this package builds on), random, dumps."""

# NOTE: the torch_* modules come after math and shape in this (sorted) order, so where a name
# was NumPy's there (gather, split, equal, div), PyTorch's function is the one exported.
from ..eager import sampling as _sampling
from ..eager.tensor import Tensor
from . import (
    complex_numbers,
    functionalize,
    inplace,
    inplace_views,
    linalg,
    masked,
    methods,
    quantized,
    random,
    signal,
    sparse,
    sparse_compressed,
)
from .autocast_state import *  # noqa: F403
from .autocast_state import __all__ as _autocast_state_all
from .autodiff import __all__ as _autodiff_all
from .autodiff import grad, hessian, jacobian, stop_gradient
from .complex_numbers import *  # noqa: F403
from .complex_numbers import __all__ as _complex_all
from .control import cond, fori_loop, scan, while_loop
from .core import Variable, constant, placeholder
from .einsum import einsum
from .indexing import index_put
from .linalg import cholesky_method as cholesky
from .linalg import det, inverse, logdet, slogdet
from .linalg_factor import lu_old as lu
from .linalg_factor import lu_solve_old as lu_solve
from .linalg_factor import lu_unpack, matrix_exp, orgqr, pinverse, triangular_solve
from .linalg_factor import qr_old as qr
from .linalg_factor import svd_old as svd
from .linalg_more import geqrf, ormqr
from .math import *  # noqa: F403
from .math import __all__ as _math_all
from .nn_conv import *  # noqa: F403
from .nn_conv import __all__ as _conv_all
from .nn_functional import *  # noqa: F403
from .nn_functional import __all__ as _nn_all
from .nn_pool import *  # noqa: F403
from .nn_pool import __all__ as _pool_all
from .quantized import *  # noqa: F403
from .quantized import __all__ as _quantized_all
from .shape import *  # noqa: F403
from .shape import __all__ as _shape_all
from .sparse_compressed import sparse_compressed_tensor, sparse_csc_tensor, sparse_csr_tensor
from .sparse_coo import sparse_coo_tensor
from .special import digamma, erfinv, i0, igamma, igammac, lgamma, mvlgamma, polygamma
from .spectral import istft, stft
from .torch_copies import *  # noqa: F403
from .torch_copies import __all__ as _copies_all
from .torch_data import *  # noqa: F403
from .torch_data import __all__ as _data_all
from .torch_extra_linalg import *  # noqa: F403
from .torch_extra_linalg import __all__ as _extra_linalg_all
from .torch_extra_math import *  # noqa: F403
from .torch_extra_math import __all__ as _extra_math_all
from .torch_extra_shape import *  # noqa: F403
from .torch_extra_shape import __all__ as _extra_shape_all
from .torch_extra_stack import *  # noqa: F403
from .torch_extra_stack import __all__ as _extra_stack_all
from .torch_index import *  # noqa: F403
from .torch_index import __all__ as _index_all
from .torch_math import *  # noqa: F403
from .torch_math import __all__ as _torch_math_all
from .torch_misc import *  # noqa: F403
from .torch_misc import __all__ as _misc_all
from .torch_misc_ops import *  # noqa: F403
from .torch_misc_ops import __all__ as _misc_ops_all
from .torch_more import *  # noqa: F403
from .torch_more import __all__ as _more_all
from .torch_namespace import *  # noqa: F403
from .torch_namespace import __all__ as _namespace_all
from .torch_nn_forms import *  # noqa: F403
from .torch_nn_forms import __all__ as _nn_forms_all
from .torch_numeric import *  # noqa: F403
from .torch_numeric import __all__ as _numeric_all
from .torch_rnn_forms import *  # noqa: F403
from .torch_rnn_forms import __all__ as _rnn_forms_all
from .torch_settings import *  # noqa: F403
from .torch_settings import __all__ as _settings_all
from .torch_shape import *  # noqa: F403
from .torch_shape import __all__ as _torch_shape_all
from .torch_stats import *  # noqa: F403
from .torch_stats import __all__ as _stats_all
from .torch_symbolic import *  # noqa: F403
from .torch_symbolic import __all__ as _symbolic_all
from .torch_variance import *  # noqa: F403
from .torch_variance import __all__ as _variance_all

methods.install()  # Symbol
methods.install(Tensor)
complex_numbers.install()  # Symbol (after methods: conj, mH... of complex values)
complex_numbers.install(Tensor)
inplace.install(Tensor)  # after methods: its `clamp` is the method form
functionalize.install()  # Symbol: in-place methods and item assignment, functionalized
inplace_views.install()  # in-place view methods (t_, squeeze_...), both
_sampling.install_distributions(Tensor, random.DISTRIBUTIONS)  # exponential_, random_...
sparse.install()  # the sparse COO layout's ops and methods (after methods: to_dense...)
sparse_compressed.install()  # CSR and CSC (after COO's: the methods both have branch there)
quantized.install()

__all__ = list(
    dict.fromkeys(
        ["placeholder", "constant", "Variable", *_math_all, *_shape_all, *_nn_all, *_conv_all,
         *_pool_all, *_autodiff_all, *_index_all, *_torch_math_all, *_torch_shape_all,
         *_extra_math_all, *_variance_all, *_extra_linalg_all, *_extra_shape_all, *_extra_stack_all,
         "einsum", "index_put", "det", "inverse", "linalg", "masked", "signal", "slogdet",
         "logdet", "cholesky",
         "svd", "qr", "pinverse", "matrix_exp", "triangular_solve", "lu_unpack", "lu_solve", "lu",
         "orgqr", "geqrf", "ormqr",
         "lgamma", "digamma", "polygamma", "erfinv", "i0", "igamma", "igammac", "mvlgamma",
         "cond", "while_loop", "fori_loop", "scan", *_data_all, *_stats_all, *_misc_all,
         *_misc_ops_all, *_namespace_all, *_more_all, *_nn_forms_all, *_copies_all,
         *_settings_all, *_numeric_all, *_rnn_forms_all, *_complex_all,
         "stft", "istft", "sparse_coo_tensor", "sparse_csr_tensor", "sparse_csc_tensor",
         "sparse_compressed_tensor", *_quantized_all, *_symbolic_all,
         *_autocast_state_all]
    )
)  # fmt: skip
