"""deploy/compose.yaml: the services docs/install.md describes, each running a real ai-fix command with real settings;
scripts/check-compose.sh (which starts the file, in CI) refusing a broken copy before it builds anything."""

import subprocess
from pathlib import Path

import pytest
import yaml

from bot.commands.main import build_parser
from bot.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())


def test_postgresql_one_intake_two_workers_after_the_migration():
    services = compose()["services"]
    assert set(services) == {"db", "migrate", "serve", "worker-1", "worker-2"}
    assert services["db"]["image"].endswith("postgres:15")
    commands = {name: s["command"][1] for name, s in services.items() if name != "db"}
    assert commands == {"migrate": "migrate", "serve": "serve", "worker-1": "worker", "worker-2": "worker"}
    for name in ("serve", "worker-1", "worker-2"):
        assert services[name]["depends_on"] == {"migrate": {"condition": "service_completed_successfully"}}
    assert services["migrate"]["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert services["serve"]["environment"]["AIFIX_WORKERS"] == "0"


def test_the_intake_listens_on_loopback_for_the_proxy_and_the_example_holds_no_secret():
    assert compose()["services"]["serve"]["ports"] == ["127.0.0.1:8000:8000"]
    example = dict(
        line.split("=", 1) for line in (ROOT / "deploy" / "ai-fix.env.example").read_text().splitlines() if "=" in line
    )
    secrets = ("AIFIX_WEBHOOK_SECRET", "AIFIX_ANTHROPIC_API_KEY", "AIFIX_ADMIN_TOKEN")
    assert [example[name] for name in secrets] == ["", "", ""], "a value left in place must not start the service"
    docs = (ROOT / "docs" / "compose.md").read_text()
    assert "chmod 600" in docs and "chmod 644" not in docs


def test_every_command_and_setting_it_uses_exists():
    parser = build_parser()
    fields = {f"AIFIX_{name.upper()}" for name in Settings.model_fields}
    for name, service in compose()["services"].items():
        if name == "db":
            continue
        assert service["command"][0] == "ai-fix"
        parser.parse_args(service["command"][1:])  # exits (fails the test) on an unknown command or option
        assert set(service["environment"]) <= fields, name
        assert service["environment"]["AIFIX_DATABASE_URL"].startswith("postgresql://aifix:")
        assert service["environment"]["AIFIX_DATABASE_URL"].endswith("@db:5432/aifix")
    example = (ROOT / "deploy" / "ai-fix.env.example").read_text().splitlines()
    assert {line.split("=")[0] for line in example if line and not line.startswith("#")} <= fields


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (
            ("      migrate:\n", "      migrat:\n"),
            "service serve depends on 'migrat', which the compose file does not define",
        ),
        (("\n  serve:\n", "\n  intake:\n"), "the compose file has no service serve running `ai-fix serve`"),
    ],
)
def test_the_compose_check_refuses_a_broken_file_before_building_anything(
    tmp_path: Path, change: tuple[str, str], refusal: str
) -> None:
    text = (ROOT / "deploy" / "compose.yaml").read_text()
    assert change[0] in text
    broken = tmp_path / "compose.yaml"
    broken.write_text(text.replace(*change))
    done = subprocess.run(
        [str(ROOT / "scripts" / "check-compose.sh"), "--compose-file", str(broken)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"compose check failed: {refusal}" in done.stderr
    assert "$ " not in done.stdout  # no podman build, podman-compose build or up ran
