"""The systemd units in deploy/: verified by systemd itself where it is installed, and their keys checked."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

UNIT = REPO / "deploy" / "footnote.service"
UNITS = sorted((REPO / "deploy").glob("*.service"))
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


def test_every_unit_restarts_within_limits_and_is_hardened() -> None:
    assert {unit.name for unit in UNITS} >= {"footnote.service", "footnote@.service", "chroma.service"}
    for path in UNITS:
        unit = read_unit(path)
        assert unit["Unit"]["StartLimitBurst"] == "5", path.name
        service = unit["Service"]
        assert service["Restart"] == "on-failure" and int(service["RestartSec"]) > 0, path.name
        assert service["ExecStart"].startswith("/opt/"), path.name  # a program in its own venv
        hardening = {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "CapabilityBoundingSet": ""}
        assert {key: service.get(key) for key in hardening} == hardening, path.name
        assert service["ReadWritePaths"].startswith("/var/lib/"), path.name
        assert unit["Install"]["WantedBy"] == "multi-user.target", path.name


def test_replicas_each_have_their_own_port_and_data_directory_and_share_the_models() -> None:
    text = (REPO / "deploy" / "footnote@.service").read_text(encoding="utf-8")
    assert "Environment=FOOTNOTE_PORT=%i" in text and "Environment=FOOTNOTE_HOME=/var/lib/footnote/%i" in text
    assert "Environment=FOOTNOTE_MODEL_DIR=/var/lib/footnote/models" in text


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
@pytest.mark.parametrize("path", UNITS, ids=lambda path: path.name)
def test_systemd_analyze_verifies_the_unit(path: Path, tmp_path: Path) -> None:
    # `verify` also checks that ExecStart's program exists. A unit names where its program is
    # installed on a server (/opt/NAME/.venv/bin), which a test machine lacks, so the copy that
    # is verified points at this environment's program instead; every other line is as written.
    text = path.read_text(encoding="utf-8")
    installed = read_unit(path)["Service"]["ExecStart"].split()[0]
    here = Path(sys.executable).parent / Path(installed).name
    if not here.exists():
        pytest.skip(f"{here.name} is not installed in this environment")
    copy = tmp_path / path.name.replace("@.", "@8081.")
    copy.write_text(text.replace(installed, str(here)), encoding="utf-8")
    result = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(copy)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert copy.name not in result.stderr, result.stderr  # no warning about our unit either
