"""The ``vsr-extproc`` command line: validate, explain, envoy-config (replay: in
tests/models/test_replay_whatif.py)."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from builders import body, chat, user

from vsr_extproc.cli import main

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "deploy" / "examples" / "rules-only.yaml"
SAMPLES = ROOT / "deploy" / "demo" / "requests"


def test_validate_summarises_a_good_config(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(DEMO)]) == 0
    out = capsys.readouterr().out
    assert "ok — 4 models, 8 signals (8 referenced), 5 decisions, default 'general_chat'" in out


def _unknown_signal(tmp_path: Path, **action: str) -> Path:
    """The demo config with a rule on a signal it does not define (and ``action`` added to
    the first decision's action), written to ``tmp_path``."""
    document = yaml.safe_load(DEMO.read_text())
    document["decisions"][3]["rules"] = {"all": ["modality.has_image", "vision.xray"]}
    document["decisions"][0]["action"].update(action)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(document))
    return bad


def test_validate_checks_every_config_given_and_fails_if_one_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _unknown_signal(tmp_path)
    other = tmp_path / "other.yaml"
    other.write_text(DEMO.read_text())
    assert main(["validate", str(DEMO), str(bad), str(other)]) == 2
    said = capsys.readouterr()
    assert f"{DEMO}: ok — " in said.out
    assert f"{other}: ok — " in said.out  # checked after the one that failed
    assert f"{bad}: invalid config" in said.err
    assert "decisions[3].rules.all[1]: unknown signal 'vision.xray'" in said.err
    assert main(["validate", str(DEMO), str(other)]) == 0


def test_validate_names_the_path_of_every_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _unknown_signal(tmp_path, colour="red")
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "decisions[0].action.colour: Extra inputs are not permitted" in err
    assert "invalid config" in err


def test_unknown_signal_is_reported_with_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _unknown_signal(tmp_path)
    assert main(["validate", str(bad)]) == 2
    assert "decisions[3].rules.all[1]: unknown signal 'vision.xray'" in capsys.readouterr().err


def test_a_precision_the_runtime_lacks_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = yaml.safe_load(DEMO.read_text())
    document["text"] = {"embedding": {"runtime": "onnxruntime", "precision": "bf16"}}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(document))
    assert main(["validate", str(bad)]) == 2
    assert "text.embedding: precision bf16 needs runtime: torch" in (capsys.readouterr().err)
    document["text"]["embedding"]["runtime"] = "torch"
    bad.write_text(yaml.safe_dump(document))
    assert main(["validate", str(bad)]) == 0


def test_validate_reports_unreadable_and_invalid_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(tmp_path / "missing.yaml")]) == 2
    assert "cannot read the config" in capsys.readouterr().err
    broken = tmp_path / "broken.yaml"
    broken.write_text("models: [\n")
    assert main(["validate", str(broken)]) == 2
    assert "invalid YAML" in capsys.readouterr().err


def test_validate_reports_a_replay_store_named_twice_without_its_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = yaml.safe_load(DEMO.read_text())
    document["replay"] = {
        "url": "postgresql://vsr:pa55-w0rd@db.internal:5432/replay",
        "path": "/var/lib/vsr/replay.sqlite3",
    }
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(document))
    assert main(["validate", str(bad)]) == 2
    said = capsys.readouterr()
    assert "replay: url and path name two stores" in said.err
    assert "pa55-w0rd" not in said.out + said.err
    document["replay"] = {"url": "postgresql://vsr@db.internal:5432/replay"}
    bad.write_text(yaml.safe_dump(document))
    assert main(["validate", str(bad)]) == 0  # validating never connects


def test_explain_prints_a_table_per_file(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(SAMPLES / "02-find-the-bug.json"), str(SAMPLES / "06-forbidden.json")]
    assert main(["explain", "--config", str(DEMO), *files]) == 0
    out = capsys.readouterr().out
    assert "decision  coding  (routed, model coder" in out
    assert "decision  refuse_forbidden  (blocked" in out
    assert "keyword.code_words" in out


def test_explain_json_lines_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = body(chat(user("find the bug"))) + b"\n\n" + body(chat(user("hi"))) + b"\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(lines)))
    assert main(["explain", "--config", str(DEMO), "--json", "-"]) == 0
    results = [orjson.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["source"], r["decision"], r["model"]) for r in results] == [
        ("stdin:1", "coding", "coder"),
        ("stdin:3", "general_chat", "general"),
    ]
    first = results[0]
    assert {s["signal"] for s in first["signals"]} >= {"keyword.code_words", "context.long"}
    assert all({"value", "confidence", "latency_ms", "error"} <= set(s) for s in first["signals"])
    assert first["decisions"][4]["decided_by"] == "decisions[4].rules.any[0]"


def test_explain_reports_a_bad_request_and_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"messages": []}')
    assert main(["explain", "--config", str(DEMO), "--json", str(bad)]) == 1
    result = orjson.loads(capsys.readouterr().out)
    assert result["status"] == 400
    assert "messages" in result["error"]


def test_envoy_config_writes_the_bootstrap(tmp_path: Path) -> None:
    out = tmp_path / "envoy.yaml"
    assert main(["envoy-config", str(DEMO), "--out", str(out)]) == 0
    bootstrap = yaml.safe_load(out.read_text())
    assert bootstrap["static_resources"]["listeners"][0]["name"] == "ingress"


def test_eval_images_passes_its_split_and_budget_and_writes_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from vsr_extproc.eval import imagegen, images

    asked: list[tuple[str, int | None, tuple[str, int] | None]] = []

    def one_image(
        split: str = "test",
        limit_per_kind: int | None = None,
        budget_ms: int | None = None,
        more: tuple[str, int] | None = None,
    ) -> dict[str, Any]:
        asked.append((split, budget_ms, more))
        expected, absent = imagegen.EXPECTED["credential"]
        sample = imagegen.Sample(
            name=f"{split}/config-000", split=split, scenario="credential", kind="config",
            expected=expected, absent=absent, data=b"", truth="",
        )  # fmt: skip
        flags = dict.fromkeys(images.DETECTIONS, False)
        outcome = images.Outcome(sample, flags, flags | {"secrets": True}, True, 0.2, 9)
        return images.report([outcome]) | {"budget_ms": budget_ms}

    monkeypatch.setattr(images, "evaluate", one_image)
    out = tmp_path / "report.json"
    code = main(["eval", "images", "--split", "dev", "--budget-ms", "0", "--report", str(out)])
    assert code == 0
    assert asked == [("dev", 0, None)]
    printed = capsys.readouterr().out
    assert "dev split, 1 images, no OCR budget" in printed
    assert "1 × secrets miss at detector" not in printed
    assert "1 × secrets miss at ocr" in printed
    assert orjson.loads(out.read_bytes())["problems"][0]["stage"] == "ocr"
    assert main(["eval", "images", "--more", "mrz", "5", "--report", str(out)]) == 0
    assert asked[-1] == ("test", None, ("mrz", 5))
    more = ["--more", "code_elsewhere", "1", "--report", str(out)]
    assert main(["eval", "images", "--split", "dev", *more]) == 0
    assert asked[-1] == ("dev", None, ("code_elsewhere", 1))


@pytest.mark.parametrize(
    ("more", "problem"),
    [
        (["passports", "5"], "SCENARIO must be one of mrz, document, code"),
        (["mrz", "five"], "SCALE must be a whole number of at least 1, not 'five'"),
        (["mrz", "0"], "SCALE must be a whole number of at least 1, not '0'"),
        (["code_elsewhere", "1"], "code_elsewhere is drawn for --split dev only"),
    ],
)
def test_eval_images_more_says_what_is_wrong_with_its_arguments(
    tmp_path: Path, more: list[str], problem: str
) -> None:
    with pytest.raises(SystemExit, match=problem):
        main(["eval", "images", "--more", *more, "--report", str(tmp_path / "r.json")])


def _with_responses(tmp_path: Path) -> Path:
    document = yaml.safe_load(DEMO.read_text())
    document["signals"]["tool_call"] = [
        {"name": "shell_rm", "tools": ["shell"], "destructive": True},
    ]
    document["signals"]["output"] = [{"name": "secret", "finds": ["secret"]}]
    document["responses"] = {
        "enabled": True,
        "decisions": [
            {"name": "no_rm", "priority": 10, "rules": "tool_call.shell_rm",
             "action": {"type": "block", "message": "no"}},
            {"name": "keys", "rules": "output.secret", "action": {"type": "redact"}},
        ],
    }  # fmt: skip
    path = tmp_path / "router.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        # a scripted reply, a recorded completion, a recorded stream
        ({"tool_calls": [{"name": "bash", "arguments": '{"cmd": "rm -rf /srv"}'}]},
         "blocked by no_rm"),
        ({"choices": [{"index": 0, "message": {"content": "key AKIAIOSFODNN7EXAMPLE"}}]},
         "redact by keys"),
        ("data: " + orjson.dumps({"choices": [{"index": 0, "delta": {"content": "hi"}}]}).decode()
         + "\n\ndata: [DONE]\n\n", "passes unchanged"),
    ],
)  # fmt: skip
def test_explain_decides_the_response_phase_on_a_given_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], answer: Any, outcome: str
) -> None:
    config = _with_responses(tmp_path)
    answer_file = tmp_path / "answer"
    answer_file.write_text(answer if isinstance(answer, str) else orjson.dumps(answer).decode())
    request = tmp_path / "request.json"
    request.write_bytes(body(chat(user("hello"))))
    code = main(["explain", "--config", str(config), "--json", "--answer", str(answer_file),
                 str(request)])  # fmt: skip
    assert code == 0
    response = orjson.loads(capsys.readouterr().out)["response"]
    assert response["outcome"] == outcome
    assert len(response["decisions"]) == 2


def test_explain_refuses_an_answer_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer_file = tmp_path / "answer"
    answer_file.write_text("{not json")
    request = tmp_path / "request.json"
    request.write_bytes(body(chat(user("hello"))))
    code = main(["explain", "--config", str(_with_responses(tmp_path)), "--answer",
                 str(answer_file), str(request)])  # fmt: skip
    assert code == 2
    assert "not JSON and not a stream of events" in capsys.readouterr().err
