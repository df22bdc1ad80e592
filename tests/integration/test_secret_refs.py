"""Secret references hold no value (ARCH-19): a value planted in every way an operator could mistype it is
refused, and then found nowhere — not in the event store, the read model, the Kafka envelopes, the audit
report, an answer, an error or a log line. References are given only to the tools they allow."""
from __future__ import annotations

import contextlib
import io
import logging
from pathlib import Path

import pytest

from infra.cli import main
from infra.settings import Settings
from tests.integration.kafka_support import events_on_topic, relay_all, store_head
from tests.integration.test_secrets import read_model_text
from tests.support import Run, toolcat_environ

VALUE = "ghp_Pl4nt3dS3cr3tV4lu3x9f2c"
CLIP = "tool.secret.copy-to-node-clipboard"
SETUP = [
    ["init", "--policy", "tyrum"],
    ["tool", "register", CLIP, "--source", "builtin", "--group", "node", "--tier", "advanced", "--visibility",
     "public", "--class", "source:sensitive"],
    ["tool", "register", "tool.desktop.act", "--source", "builtin", "--group", "node", "--tier", "advanced",
     "--visibility", "public"],
    ["node", "pair", "laptop"],
    ["node", "capability", "laptop", "--advertise", "tyrum.clipboard.write", "tyrum.desktop.act"],
    ["node", "ready", "laptop"],
]
# Every way a value could be slipped in, and the exit status of its refusal.
ATTEMPTS = [
    (["secret", "ref", "add", "github-token", "--allow-tool", CLIP, "--value", VALUE], 2),
    (["secret", "ref", "add", "github-token", "--allow-tool", CLIP, f"--secret={VALUE}"], 2),
    (["secret", "ref", "add", "github-token", "--allow-tool", CLIP, VALUE], 2),
    (["secret", "ref", "add", "--value", VALUE, "github-token", "--allow-tool", CLIP], 2),
    (["secret", "ref", "add", VALUE, "--allow-tool", CLIP], 3),
    (["secret", "ref", "add", VALUE.lower(), "--allow-tool", CLIP], 3),  # value-like but name-shaped: '_'
    (["secret", "ref", "add", "github-token", "--allow-tool", VALUE], 3),
]


def run(settings: Settings, *args: str, as_json: bool = True) -> Run:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, *(["--json"] if as_json else [])], settings)
    return Run(code, out.getvalue(), err.getvalue())


def test_a_planted_secret_value_is_refused_everywhere_and_found_nowhere(
        kafka_settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    settings, outputs = kafka_settings, []
    with toolcat_environ("operator"):
        for args in SETUP:
            outputs.append(run(settings, *args))
            assert outputs[-1].code == 0, outputs[-1].stderr
        for args, code in ATTEMPTS:
            for as_json in (True, False):
                outputs.append(run(settings, *args, as_json=as_json))
                assert outputs[-1].code == code, (args, outputs[-1].stderr)
        outputs.append(run(settings, "secret", "ref", "add", "github-token", "--allow-tool", CLIP))
        assert outputs[-1].code == 0, outputs[-1].stderr
        allowed = run(settings, "route", "node", CLIP, "--secret-ref", "github-token")
        refused = run(settings, "route", "node", "tool.desktop.act", "--secret-ref", "github-token")
        reports = [run(settings, "audit", "report", "--format", f, "-o", str(tmp_path / f"report.{f}"))
                   for f in ("html", "json")]
    outputs += [allowed, refused, *reports]

    assert allowed.json["node"] == "laptop" and allowed.json["secret_ref"] == "github-token"
    assert refused.code == 3 and '"secret_ref_not_allowed"' in refused.stderr
    assert all(r.code == 0 for r in reports), [r.stderr for r in reports]
    head = store_head(settings)
    assert relay_all(settings, tmp_path / "relay.state") == head
    envelopes = events_on_topic(settings, range(1, head + 1))

    places = {"answers and errors": "\n".join(o.stdout + o.stderr for o in outputs),
              "log lines": "\n".join(r.getMessage() for r in caplog.records),
              "Kafka envelopes": "\n".join(m.value.decode() for m in envelopes),
              "read model rows": read_model_text(settings),
              **{f"audit report {f}": (tmp_path / f"report.{f}").read_text() for f in ("html", "json")},
              **{f"file {p.name}": p.read_bytes().decode("latin-1") for p in settings.home.rglob("*") if p.is_file()}}
    assert "SecretRef.Added" in places["Kafka envelopes"] and "github-token" in places["read model rows"]
    for place, text in places.items():
        assert VALUE not in text and VALUE.lower() not in text, f"the planted value appears in {place}"
