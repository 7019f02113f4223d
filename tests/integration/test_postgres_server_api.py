"""The HTTP API on a PostgreSQL catalog: /readyz asks the catalog, and a lost database is a 503
with Retry-After on readiness and on requests (never a 500 or a hang) until it is back."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from tests.postgres_server import started_server
from tests.unit.server_fixtures import APPLE_REPLY, ask_body, build


def test_readyz_reports_the_postgres_catalog_and_its_loss(tmp_path: Path) -> None:
    server = started_server()
    cluster = next(server)  # a cluster of this test's own, which it stops
    try:
        api, application = build(tmp_path, [APPLE_REPLY], catalog_url=cluster.create_database("ready"))
        with TestClient(api) as client:
            ready = client.get("/readyz")
            answer = client.post("/v1/chat/completions", json=ask_body())

            cluster.stop(mode="immediate")
            lost = client.get("/readyz")
            search = client.post("/v1/search", json={"query": "apple trees", "max_results": 3})
            metrics = client.get("/metrics").text
            cluster.start()
        application.close()
    finally:
        server.close()

    assert ready.status_code == 200, ready.json()
    assert ready.json()["stores"]["catalog"] == {"kind": "postgresql", "status": "ok", "detail": None}
    assert answer.status_code == 200 and answer.json()["citations"][0].endswith("orchard.md")
    assert lost.status_code == 503 and lost.json()["status"] == "unavailable"
    catalog = lost.json()["stores"]["catalog"]
    assert catalog["kind"] == "postgresql" and catalog["status"] == "unavailable"
    assert "FOOTNOTE_CATALOG_URL=postgresql://footnote@127.0.0.1:" in catalog["detail"]
    assert lost.json()["stores"]["vectors"]["status"] == "ok"
    assert search.status_code == 503, search.json()
    assert int(search.headers["Retry-After"]) > 0 and search.json()["error"]["code"] == "store_unavailable"
    # /metrics still answers, counting the catalog's errors, with no chunk count to give.
    assert 'footnote_store_errors_total{operation="count_chunks",store="catalog"}' in metrics
    assert "footnote_index_chunks NaN" in metrics
