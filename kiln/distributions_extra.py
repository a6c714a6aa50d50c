"""stub"""

__all__ = []
EXTRA_KL_RULES = {}
