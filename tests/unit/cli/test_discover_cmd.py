"""``headwater discover`` names the table each stream goes to, whichever the destination."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from headwater.cli.app import app


def _connection(tmp_path: Path, destination: str) -> Path:
    path = tmp_path / "shop.yaml"
    path.write_text("name: shop\nsource: {type: sample, config: {users: 10, orders: 5}}\n"
                    f"destination: {destination}\n")
    return path


def test_the_tables_follow_the_destination_type_alone(tmp_path: Path) -> None:
    delta = _connection(tmp_path, f"{{type: delta, config: {{path: {tmp_path / 'lake'}, "
                                  "database: raw, table_prefix: shop_}}")
    result = CliRunner().invoke(app, ["discover", str(delta), "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert [s["name"] for s in document["streams"]] == ["users", "orders"]  # the catalog, as is
    assert document["tables"]["users"] == {"table": str(tmp_path / "lake" / "users"),
                                           "table_name": "raw.shop_users"}

    iceberg = _connection(tmp_path, f"{{type: iceberg, config: {{warehouse: {tmp_path / 'wh'}, "
                                    "namespace: raw, table_prefix: shop_}}")
    result = CliRunner().invoke(app, ["discover", str(iceberg), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tables"]["orders"]["table"] == "raw.shop_orders"
    assert not (tmp_path / "wh").exists()  # discovering touches no table

    text = CliRunner().invoke(app, ["discover", str(iceberg)], env={"COLUMNS": "200"})
    assert text.exit_code == 0, text.output
    assert "-> iceberg table raw.shop_users" in text.stdout
