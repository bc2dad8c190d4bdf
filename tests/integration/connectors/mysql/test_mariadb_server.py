"""The test server (``scripts/mariadb``) is what the mysql and jdbc sources' tests assume."""

from __future__ import annotations

from typing import Any


def test_mariadb_server_writes_the_binary_log_change_capture_reads(mariadb_server: Any) -> None:
    with mariadb_server.database() as name:
        connection = mariadb_server.connect(name)
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT @@log_bin, @@binlog_format, @@binlog_row_image, "
                               "@@binlog_row_metadata, @@gtid_strict_mode, @@bind_address, "
                               "@@time_zone, @@character_set_server")
                assert cursor.fetchone() == (1, "ROW", "FULL", "FULL", 1, "127.0.0.1",
                                             "+00:00", "utf8mb4")
                cursor.execute("CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(10))")
                cursor.execute("INSERT INTO t VALUES (1, '😀')")
                cursor.execute("SELECT s FROM t")
                assert cursor.fetchone() == ("😀",)
                cursor.execute("SELECT @@gtid_binlog_pos")
                assert cursor.fetchone()[0]  # a GTID position: the insert was logged
        finally:
            connection.close()
