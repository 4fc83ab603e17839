"""The numeric option ranges (fsadvisor/limits.py's one table), for the front ends: they
check an option as they parse it and show its range in its help, and import only the
service (tests/unit/test_front_end_imports.py)."""

from fsadvisor.limits import CHOICES, LIMITS, check, help_range, readme_table  # noqa: F401
