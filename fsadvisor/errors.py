"""Domain errors. Front ends turn any of these into one line on stderr and exit code 2."""


class FsAdvisorError(Exception):
    """A problem the user can fix (bad input, unsafe device, unsupported filesystem)."""


class ProfileError(FsAdvisorError):
    pass


class ConfigError(FsAdvisorError):
    pass


class DeviceRefused(FsAdvisorError):
    """The device must not be touched; the message says why in one line."""


class StoreError(FsAdvisorError):
    pass


class EnergyError(FsAdvisorError):
    pass


class NotSupported(FsAdvisorError):
    """E.g. f2fs on a kernel without it: reported, never a crash."""
