"""The peer of bench:throughput: dlt's `rest_api` source reading a companion world into DuckDB.

Reads what a sync reads, the way a dlt user would declare it: the ticket list (with ticket fields), each
ticket's thread as a child resource, the CSAT export by sent date and the agent-session export in the given
windows, and the reference lists. Every resource merges by `id` (as the sync upserts by key). dlt's own
defaults otherwise (sequential requests, its extract/normalize/load steps).

    python dlt-rest-api.py '<json: base_url, api_key, windows, include_comments, pipelines_dir>'

Prints one JSON line: wall time (ms) of the whole pipeline run, and rows per table as loaded.
"""

import json
import sys
import time

import dlt
from dlt.sources.rest_api import rest_api_source

args = json.loads(sys.argv[1])
started = time.perf_counter()

cursor = {"type": "cursor", "cursor_path": "pagination.next_cursor", "cursor_param": "cursor"}
resources = [
    {"name": "tickets", "endpoint": {"path": "tickets", "params": {"include": "ticket_fields", "limit": 100}}},
    {
        "name": "ticket_messages",
        "endpoint": {
            "path": "tickets/{ticket_number}/messages",
            "params": {
                "ticket_number": {"type": "resolve", "resource": "tickets", "field": "ticket_number"},
                "limit": 100,
            },
        },
    },
    {"name": "views", "endpoint": {"path": "views", "params": {"limit": 100}}},
    {"name": "tags", "endpoint": {"path": "tags", "params": {"limit": 100}}},
    {"name": "teams", "endpoint": {"path": "teams", "params": {"limit": 100}}},
    {"name": "agents", "endpoint": {"path": "agents", "params": {"limit": 100}}},
    {
        "name": "metric_catalog",
        "endpoint": {"path": "reports/metrics", "paginator": "single_page", "params": {}},
    },
]
for i, w in enumerate(args["windows"]):
    resources.append(
        {
            "name": f"csat_surveys_{i}",
            "table_name": "csat_surveys",
            "endpoint": {
                "path": "csat-surveys",
                "params": {
                    "sent_from": w["from"],
                    "sent_before": w["before"],
                    "include_comments": "true" if args["include_comments"] else "false",
                    "limit": 100,
                },
            },
        }
    )
    resources.append(
        {
            "name": f"agent_sessions_{i}",
            "table_name": "agent_sessions",
            "endpoint": {"path": "agent-sessions", "params": {"from": w["from"], "before": w["before"], "limit": 100}},
        }
    )

source = rest_api_source(
    {
        "client": {
            "base_url": args["base_url"].rstrip("/") + "/public/v1/",
            "headers": {"cx-api-key": args["api_key"]},
            "paginator": cursor,
        },
        "resource_defaults": {
            "primary_key": "id",
            "write_disposition": "merge",
            "endpoint": {"data_selector": "data"},
        },
        "resources": resources,
    }
)

pipeline = dlt.pipeline(
    pipeline_name="bench_throughput",
    destination=dlt.destinations.duckdb(args["pipelines_dir"] + "/bench_throughput.duckdb"),
    pipelines_dir=args["pipelines_dir"],
    dataset_name="support",
)
pipeline.run(source)
wall_ms = (time.perf_counter() - started) * 1000

rows = {}
with pipeline.sql_client() as client:
    for table in ["tickets", "ticket_messages", "csat_surveys", "agent_sessions", "views", "tags", "teams", "agents", "metric_catalog"]:
        try:
            rows[table] = client.execute_sql(f"SELECT count(*) FROM {table}")[0][0]
        except Exception:
            rows[table] = 0
print(json.dumps({"wall_ms": round(wall_ms), "rows": rows}))
