"""The one engine registry: names, defaults, options checked before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.agents.bundle import ModelConfig
from harness.engines.registry import ENGINE_NAMES, SERVED_ENGINE_NAMES, build_served, get_engine, open_engine
from harness.engines.shapes import EngineContext, EngineError
from harness.run_options import RunOptions

BUNDLE_MODEL = ModelConfig(family="qwen", id="org/served-7b", base_url="http://127.0.0.1:9/v1", api_key_env="K_API_KEY")


def test_todays_engines_and_what_can_be_served() -> None:
    assert ENGINE_NAMES == ("oracle", "local", "openai", "vllm")
    assert SERVED_ENGINE_NAMES == ("oracle", "local")
    assert [get_engine(name).concurrency for name in ENGINE_NAMES] == [1, 1, 4, 8]


def test_unknown_engine_names_the_known_ones() -> None:
    with pytest.raises(EngineError, match="unknown engine 'vlm': expected one of oracle, local, openai, vllm"):
        get_engine("vlm")
    with pytest.raises(EngineError, match="cannot be served"):
        build_served("openai")


@pytest.mark.parametrize("name", ["oracle", "local"])
def test_server_options_are_refused_by_in_process_engines(name: str) -> None:
    with pytest.raises(EngineError, match="--base-url and --model are for a server engine"):
        open_engine(RunOptions(engine=name, model="x"))
    with pytest.raises(EngineError, match="--base-url and --model are for a server engine"):
        open_engine(RunOptions(engine=name, base_urls=("http://h:1/v1",)))


@pytest.mark.parametrize("name", ["local", "openai", "vllm"])
def test_target_is_for_the_oracle_only(name: str) -> None:
    with pytest.raises(EngineError, match="--target is for --engine oracle"):
        open_engine(RunOptions(engine=name, target="vllm"))


def test_the_guidance_backend_is_for_engines_that_act_on_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.engines.vllm.guidance_wire import GuidanceWireClient

    monkeypatch.delenv("VLLM_BASE_URL", raising=False)
    with pytest.raises(EngineError, match="--grammar-backend is for --engine oracle or vllm"):
        open_engine(RunOptions(engine="openai", base_urls=("http://h:1/v1",), model="m", families=["qwen"],
                               grammar_backend="guidance"))
    # a vLLM server you run, said to be on guidance: its requests carry grammars as llguidance reads them
    engine, _ = open_engine(RunOptions(engine="vllm", base_urls=("http://h:1/v1",), model="m", families=["qwen"],
                                       grammar_backend="guidance"))
    assert isinstance(engine.client, GuidanceWireClient) and engine.client.families == {"m": "qwen"}
    plain, _ = open_engine(RunOptions(engine="vllm", base_urls=("http://h:1/v1",), model="m", families=["qwen"]))
    assert not isinstance(plain.client, GuidanceWireClient)


def test_vllm_with_a_base_url_uses_that_server_and_starts_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_BASE_URL", raising=False)
    with pytest.raises(EngineError, match="one --base-url"):
        open_engine(RunOptions(engine="vllm", base_urls=("http://h:1/v1", "http://h:2/v1"), model="m", families=["qwen"]))
    engine, families = open_engine(RunOptions(engine="vllm", base_urls=("http://h:1/v1",), model="m", families=["qwen"]))
    assert (engine.name, engine.base_url, families) == ("vllm", "http://h:1/v1", ["qwen"])
    assert "a vLLM server you run at http://h:1/v1 (--base-url)" in engine.note
    monkeypatch.setenv("VLLM_BASE_URL", "http://h:3/v1")
    engine, _ = open_engine(RunOptions(engine="vllm", model="m", families=["qwen"]))
    assert engine.base_url == "http://h:3/v1" and "($VLLM_BASE_URL)" in engine.note


@pytest.mark.parametrize(
    ("options", "bundle", "families", "base_url"),
    [
        (RunOptions(engine="openai", model="Qwen/Qwen3-0.6B"), None, ["qwen"], "http://127.0.0.1:8000/v1"),  # the id
        (RunOptions(engine="openai", model="org/served-7b"), BUNDLE_MODEL, ["qwen"], "http://127.0.0.1:9/v1"),
        (RunOptions(engine="openai", model="oracle-function_gemma", base_urls=("http://h:1/v1",)), None,
         ["function_gemma"], "http://h:1/v1"),
    ],
)
async def test_openai_takes_flags_then_the_bundle(options: RunOptions, bundle: ModelConfig | None, families: list[str],
                                                  base_url: str) -> None:
    engine, got = open_engine(options, EngineContext(bundle_model=bundle))
    try:
        assert got == families and engine.base_url == base_url and engine.model_id == options.model
    finally:
        await engine.aclose()


def test_openai_needs_a_family_it_can_tell() -> None:
    with pytest.raises(EngineError, match="which model family is 'org/served-7b'"):
        open_engine(RunOptions(engine="openai", model="org/served-7b"))
    with pytest.raises(EngineError, match="is one model: pass one --family"):
        open_engine(RunOptions(engine="openai", model="Qwen/Qwen3-0.6B", families=["qwen", "function_gemma"]))


# -- the openai engine's server and key: flags > environment > bundle ------------------------------------

ENV_URL, ENV_KEY = "http://env:1/v1", "sk-env"
SETTINGS = [
    # (flags, environment, bundle, expected urls, source, key)
    (("http://flag:1/v1",), {"OPENAI_BASE_URL": ENV_URL}, BUNDLE_MODEL, ("http://flag:1/v1",), "--base-url", None),
    ((), {"OPENAI_BASE_URL": ENV_URL}, BUNDLE_MODEL, (ENV_URL,), "$OPENAI_BASE_URL", None),
    ((), {}, BUNDLE_MODEL, ("http://127.0.0.1:9/v1",), "the bundle's model.base_url", None),
    ((), {}, None, ("http://127.0.0.1:8000/v1",), "the default", None),
    ((), {"OPENAI_API_KEY": ENV_KEY, "K_API_KEY": "sk-bundle"}, BUNDLE_MODEL, ("http://127.0.0.1:9/v1",),
     "the bundle's model.base_url", ENV_KEY),
    ((), {"K_API_KEY": "sk-bundle"}, BUNDLE_MODEL, ("http://127.0.0.1:9/v1",), "the bundle's model.base_url", "sk-bundle"),
]


@pytest.mark.parametrize(("flags", "environ", "bundle", "urls", "source", "key"), SETTINGS)
def test_openai_settings_come_from_flags_then_environment_then_bundle(
    flags: tuple[str, ...], environ: dict[str, str], bundle: ModelConfig | None, urls: tuple[str, ...],
    source: str, key: str | None,
) -> None:
    from harness.engines.remote.attach import server_settings

    got = server_settings(RunOptions(engine="openai", base_urls=flags), bundle, environ)
    assert (got.base_urls, got.source, got.api_key) == (urls, source, key)


def test_listing_the_served_models_sends_the_key() -> None:
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from harness.engines.remote.attach import served_models

    seen: list[str] = []

    class Models(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            body = json.dumps({"object": "list", "data": [{"id": "m1", "object": "model", "created": 0,
                                                          "owned_by": "x"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Models)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        assert served_models(f"http://127.0.0.1:{httpd.server_address[1]}/v1", "sk-secret") == ["m1"]
    finally:
        httpd.shutdown()
    assert seen == ["Bearer sk-secret"]


def test_an_unreachable_server_is_a_clear_engine_error() -> None:
    from harness.engines.remote.attach import served_models

    with pytest.raises(EngineError, match=r"cannot list the models of http://127.0.0.1:9/v1/models: .*is the server running"):
        served_models("http://127.0.0.1:9/v1", timeout_s=2.0)


def test_an_engine_that_cannot_load_is_refused_never_replaced(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    """With llama-cpp-python missing, the default engine stops the run (exit 2) naming the package and the
    command that installs it; the oracle never stands in for a model."""
    from typer.testing import CliRunner

    import harness.engines.local.opener as setup
    from harness.cli.main import app

    real = setup.local_unavailable()
    monkeypatch.setattr(setup, "local_unavailable", lambda: "llama-cpp-python is not installed; install it with: "
                        "CMAKE_ARGS=-DGGML_NATIVE=OFF pip install -e '.[local]'")
    with pytest.raises(EngineError, match=r"--engine local cannot run on this machine: llama-cpp-python"):
        open_engine(RunOptions(engine="local"))
    smoke = Path(__file__).resolve().parents[2] / "suites" / "smoke"
    result = CliRunner().invoke(app, ["run", str(smoke), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert "llama-cpp-python is not installed" in result.output and "pip install -e '.[local]'" in result.output
    assert not (tmp_path / "run" / "samples.jsonl").exists()
    assert real is None or "pip install" in real  # the real check names the install command too
