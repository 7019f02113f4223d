"""The systemd unit in deploy/: verified by systemd itself where it is installed, and its keys checked."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

UNIT = REPO / "deploy" / "footnote.service"
INSTALLED_AT = "/opt/footnote/.venv/bin/footnote"


def read_unit(path: Path) -> configparser.RawConfigParser:
    # strict=False: systemd allows repeated keys (several Environment= lines).
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read(path, encoding="utf-8")
    return parser


def test_unit_restarts_on_failure_within_limits_and_is_hardened() -> None:
    unit = read_unit(UNIT)
    assert unit["Unit"]["StartLimitBurst"] == "5" and unit["Unit"]["StartLimitIntervalSec"] == "300"
    service = unit["Service"]
    assert service["Restart"] == "on-failure" and int(service["RestartSec"]) > 0
    assert service["ExecStart"] == f"{INSTALLED_AT} serve"
    hardening = {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "PrivateDevices": "yes",
        "ProtectKernelTunables": "yes",
        "RestrictSUIDSGID": "yes",
        "CapabilityBoundingSet": "",
    }
    assert {key: service.get(key) for key in hardening} == hardening
    # The data directory is the one writable path, and it is where FOOTNOTE_HOME points.
    assert service["ReadWritePaths"] == "/var/lib/footnote" and service["StateDirectory"] == "footnote"
    assert "FOOTNOTE_HOME=/var/lib/footnote" in UNIT.read_text(encoding="utf-8")
    assert "FOOTNOTE_HOST=127.0.0.1" in UNIT.read_text(encoding="utf-8")
    assert unit["Install"]["WantedBy"] == "multi-user.target"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verifies_the_unit(tmp_path: Path) -> None:
    # `verify` also checks that ExecStart's program exists. The unit names where it is
    # installed on a server (/opt/footnote), which a test machine lacks, so the copy that
    # is verified points at this checkout's `footnote` instead; every other line is as written.
    footnote = Path(sys.executable).parent / "footnote"
    assert footnote.exists(), "the footnote console script is not installed in this environment"
    text = UNIT.read_text(encoding="utf-8")
    assert INSTALLED_AT in text
    copy = tmp_path / "footnote.service"
    copy.write_text(text.replace(INSTALLED_AT, str(footnote)), encoding="utf-8")
    result = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(copy)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "footnote.service" not in result.stderr, result.stderr  # no warning about our unit either
