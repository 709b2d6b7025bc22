"""The embedders: the bundled model finds meaning, refuses a damaged file; an endpoint, or its absence."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from chronograph.projections.errors import EmbeddingsUnavailableError
from chronograph.projections.search.embedder import open_embedder
from chronograph.projections.search.endpoint import Endpoint
from chronograph.projections.search.minilm import LocalMiniLM


@pytest.fixture(scope="module")
def model() -> LocalMiniLM:
    loaded = LocalMiniLM()
    loaded.load()
    return loaded


def test_the_bundled_model_places_a_paraphrase_nearest_its_meaning(model: LocalMiniLM) -> None:
    passages = ["Bob (person). Software engineer at a startup",
                "Carol (person). Grows tomatoes in her garden",
                "Dan (person). Plays the violin in an orchestra"]
    vectors = model.embed(passages)
    query = model.embed(["programmer"])[0]
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert int(np.argmax(vectors @ query)) == 0
    assert int(np.argmax(vectors @ model.embed(["a musician"])[0])) == 2


def test_a_text_embeds_the_same_alone_or_in_a_batch(model: LocalMiniLM) -> None:
    texts = ["short", "a much longer text that pads the batch " * 5, "middle sized text"]
    batch = model.embed(texts)
    alone = np.vstack([model.embed([t]) for t in texts])
    assert np.allclose(batch, alone, atol=1e-4)


def test_a_damaged_or_missing_model_file_is_refused_with_how_to_reinstall(tmp_path: Path) -> None:
    damaged = tmp_path / "model.onnx"
    damaged.write_bytes(b"\x08\x07 not a model")
    with pytest.raises(EmbeddingsUnavailableError, match="damaged.*force-reinstall"):
        LocalMiniLM(path=damaged).load()
    with pytest.raises(EmbeddingsUnavailableError, match="cannot be read"):
        LocalMiniLM(path=tmp_path / "gone.onnx").load()


TEXTS = ["Bob (person). Software engineer at a startup", "a much longer text that pads the batch " * 5, "short"]


def test_the_optimised_graph_is_kept_once_and_a_later_load_reads_it_to_the_same_vectors(
        model: LocalMiniLM, tmp_path: Path) -> None:
    first = LocalMiniLM(cache=tmp_path)
    made = first.embed(TEXTS)
    kept = list(tmp_path.iterdir())
    assert len(kept) == 1 and kept[0].suffix == ".onnx" and kept[0].stat().st_size > 50 << 20
    stamp = kept[0].stat().st_mtime_ns
    again = LocalMiniLM(cache=tmp_path).embed(TEXTS)  # reads the kept graph, optimises nothing
    assert list(tmp_path.iterdir()) == kept and kept[0].stat().st_mtime_ns == stamp
    assert np.allclose(again, made, atol=1e-5)
    assert np.allclose(again, model.embed(TEXTS), atol=1e-5)  # the same vectors as without a cache


def test_a_damaged_kept_graph_is_left_and_said_and_an_unusable_cache_is_passed_over(
        model: LocalMiniLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    LocalMiniLM(cache=tmp_path / "models").load()
    (kept,) = (tmp_path / "models").iterdir()
    kept.write_bytes(b"\x08\x07 torn")
    assert np.allclose(LocalMiniLM(cache=tmp_path / "models").embed(TEXTS), model.embed(TEXTS), atol=1e-5)
    assert kept.read_bytes() == b"\x08\x07 torn"  # never replaced unasked
    assert "does not load" in capsys.readouterr().err and [kept] == list((tmp_path / "models").iterdir())
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    assert np.allclose(LocalMiniLM(cache=blocked / "models").embed(TEXTS), model.embed(TEXTS), atol=1e-5)
    assert blocked.read_text() == "not a folder"


def test_off_means_no_embedder_and_an_url_needs_a_model_name() -> None:
    assert open_embedder("off") is None
    assert isinstance(open_embedder("auto"), LocalMiniLM)  # the test environment has the extra
    with pytest.raises(ValueError, match="model"):
        open_embedder("http://127.0.0.1:1/v1")


class _Embeddings(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append((self.headers.get("Authorization"), body["model"]))  # type: ignore[attr-defined]
        data = [{"index": i, "embedding": [float(len(text)), 1.0, 0.0]} for i, text in enumerate(body["input"])]
        reply = json.dumps({"data": list(reversed(data))}).encode()  # out of order, as the spec allows
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_an_openai_compatible_endpoint_embeds_in_order_with_the_key(endpoint: ThreadingHTTPServer) -> None:
    url = f"http://127.0.0.1:{endpoint.server_address[1]}/v1"
    embedder = open_embedder(url, model="nomic-embed-text", api_key="k3y")
    assert isinstance(embedder, Endpoint) and embedder.model == "nomic-embed-text"
    vectors = embedder.embed(["a", "abc"])
    assert np.allclose(vectors[0], np.array([1, 1, 0]) / np.sqrt(2), atol=1e-6)
    assert np.allclose(vectors[1], np.array([3, 1, 0]) / np.sqrt(10), atol=1e-6)
    assert endpoint.seen == [("Bearer k3y", "nomic-embed-text")]  # type: ignore[attr-defined]


def test_an_endpoint_that_is_down_is_a_clear_error() -> None:
    with socket.socket() as probe:  # bound, never listening: refused, and no other test's server can take it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        embedder = Endpoint(f"http://127.0.0.1:{port}", "m", timeout=2)
        with pytest.raises(EmbeddingsUnavailableError, match="does not answer"):
            embedder.embed(["hello"])
