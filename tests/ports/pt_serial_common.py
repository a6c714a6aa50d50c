"""The comparison both serialization ports make: a scenario `fn(lib)` run on torch and on
kiln, the same exception class where torch raises, else the same result (`assert_same`)."""

from pt_oracle import assert_same


def check_like_torch(torch, kn, fn) -> None:
    want, torch_error = _outcome(torch, fn)
    got, kiln_error = _outcome(kn, fn)
    if torch_error is not None:
        assert isinstance(kiln_error, type(torch_error)), (
            f"torch raised {type(torch_error).__name__}: {torch_error}; kiln: "
            f"{type(kiln_error).__name__ if kiln_error else got}"
        )
        return
    if kiln_error is not None:
        raise kiln_error
    assert_same(got, want)


def _outcome(lib, fn):
    try:
        return fn(lib), None
    except Exception as error:  # noqa: BLE001 -- the exception is the result compared
        return None, error
