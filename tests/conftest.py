"""Test settings: hypothesis runs without deadlines (CI machines are slow and shared) and,
under CI, derandomized so that a red build can be reproduced exactly."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True,
                          print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")
