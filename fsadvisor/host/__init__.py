"""The machine: read-only block-device discovery, the safety verdict, loop devices.
Everything that inspects or touches the host's devices lives here."""
