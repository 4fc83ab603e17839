"""Real loop devices (root): the kernel's own answer about direct I/O."""

from __future__ import annotations

import pytest

from fsadvisor.host import loopdev

pytestmark = pytest.mark.device


@pytest.mark.device
def test_real_loop_devices_report_what_was_asked(loop_device):
    assert loopdev.direct_io_state(loop_device(64 << 20)) is True
    assert loopdev.direct_io_state(loop_device(64 << 20, direct_io=False)) is False
