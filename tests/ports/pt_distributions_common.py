"""What the ports of PyTorch's distribution tests share (test_port_pt_distributions*.py): the
fixture that turns argument validation on in both libraries, and the run of one scenario with
validation on (scenarios of errors) or off (values outside the supports, as PyTorch's tests)."""

import pytest

import kiln as kn


@pytest.fixture
def validating(torch):
    """Argument validation on in both, as by default (torch.compile's first use, another
    test's, turns torch's off for the whole process); the previous settings restored."""
    was = (
        torch.distributions.Distribution._validate_args,
        kn.distributions.Distribution._validate_args,
    )
    torch.distributions.Distribution.set_default_validate_args(True)
    kn.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(was[0])
    kn.distributions.Distribution.set_default_validate_args(was[1])


def check(torch, scenarios, name, mode, validates):
    """`scenarios.check` of `name`, with validation off in both unless `validates`."""
    if not validates:
        for lib in (torch, kn):
            lib.distributions.Distribution.set_default_validate_args(False)
    scenarios.check(torch, name, mode)
