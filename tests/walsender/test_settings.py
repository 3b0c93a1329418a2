"""The fake's settings (walsender/_settings.py): one table from which SHOW,
current_setting() and pg_settings are derived, so that the three agree on every major;
SHOW's units as guc.c writes them; a scenario's settings checked as guc.c checks values."""

from __future__ import annotations

import pytest

from pgwire_spec.majors import MAJORS
from pgwire_spec.walsender import ServerState
from pgwire_spec.walsender._settings import SETTINGS, SettingError, lookup, parse_value, show_text
from pgwire_spec.walsender.scenario import Limits, Scenario, ScenarioError

from .scenarios import accounts
from .test_sql import _client, _columns, _error, _ok, _rows, _state


def test_one_row_per_setting_and_major_in_name_order() -> None:
    names = [s.name.lower() for s in SETTINGS]
    assert names == sorted(names)
    for major in MAJORS:
        present = [s.name for s in SETTINGS if s.exists(major)]
        assert len(present) == len(set(present)), major


def _show(name: str, value: str, major: int = 16) -> str:
    setting = lookup(name, major)
    assert setting is not None
    return show_text(setting, value)


def test_show_writes_the_largest_unit_that_divides_the_value() -> None:
    """guc.c convert_int_from_base_unit: 60000 ms is 1min, 1500 ms stays ms; 16384 blocks
    of 8 kB are 128MB, 2049 are kB; 0 and -1 bare; settings without a unit as they are."""
    assert _show("wal_sender_timeout", "60000") == "1min"
    assert _show("wal_sender_timeout", "1500") == "1500ms"
    assert _show("wal_sender_timeout", "0") == "0"
    assert _show("authentication_timeout", "60") == "1min"
    assert _show("authentication_timeout", "90") == "90s"
    assert _show("shared_buffers", "16384") == "128MB"
    assert _show("shared_buffers", "2049") == "16392kB"
    assert _show("wal_segment_size", "16777216") == "16MB"
    assert _show("wal_segment_size", "2048", 10) == "16MB"
    assert _show("max_slot_wal_keep_size", "-1") == "-1"
    assert _show("max_slot_wal_keep_size", "2048") == "2GB"
    assert _show("logical_decoding_work_mem", "64") == "64kB"
    assert _show("max_connections", "100") == "100"


def test_values_are_read_as_postgresql_conf_gives_them() -> None:
    """parse_int with units, parse_bool, the enum's values and the bounds (guc.c)."""
    def parsed(name: str, raw: object) -> str:
        setting = lookup(name, 16)
        assert setting is not None
        return parse_value(setting, raw)

    assert parsed("statement_timeout", "30s") == "30000"
    assert parsed("statement_timeout", "1.5 min") == "90000"
    assert parsed("statement_timeout", 250) == "250"
    assert parsed("shared_buffers", "1GB") == "131072"
    assert parsed("statement_timeout", "2.5ms") == "2" and parsed("statement_timeout", "0.5 s") == "500"
    assert parsed("max_slot_wal_keep_size", "-1") == "-1"
    assert parsed("track_commit_timestamp", "yes") == "on"
    assert parsed("track_commit_timestamp", False) == "off"
    assert parsed("wal_level", "Replica") == "replica"
    assert parsed("search_path", "app, public") == "app, public"
    for name, raw in [("statement_timeout", "30 parsecs"), ("statement_timeout", "soon"), ("shared_buffers", "1s"),
                      ("max_replication_slots", 300000), ("track_commit_timestamp", "maybe"),
                      ("wal_level", "archive"), ("statement_timeout", "9" * 5000), ("statement_timeout", "")]:
        with pytest.raises(SettingError):
            parsed(name, raw)


def test_a_scenario_setting_is_checked_when_the_scenario_loads() -> None:
    """A value the setting cannot take, or a setting another server key sets (what the
    fake enforces), is a ScenarioError naming the entry."""
    base = {**accounts(16), "auth": {"method": "trust"}}
    with pytest.raises(ScenarioError) as exc:
        Scenario.from_dict({**base, "server": {"version": "16.4", "settings": {"wal_level": "archive"}}})
    assert exc.value.path == "server.settings.wal_level" and "minimal, replica, logical" in exc.value.expected
    with pytest.raises(ScenarioError) as exc:
        Scenario.from_dict({**base, "server": {"version": "16.4", "settings": {"WAL_SENDER_TIMEOUT": "5s"}}})
    assert "server.wal_sender_timeout" in exc.value.expected
    with pytest.raises(ScenarioError) as exc:
        Scenario.from_dict({**base, "server": {"version": "16.4", "settings": {"max_wal_senders": "many"}}})
    assert exc.value.path == "server.settings.max_wal_senders" and "an integer" in exc.value.expected


@pytest.mark.parametrize("major", sorted(MAJORS))
def test_show_current_setting_and_pg_settings_agree(major: int) -> None:
    """Every row of pg_settings: SHOW and current_setting() give its value in SHOW's
    units, on every major (the one table makes them agree); the scenario's settings and the
    limits in force are the values."""
    scenario = Scenario.from_dict({**accounts(major), "auth": {"method": "trust"}, "server": {
        "version": f"{major}.2", "wal_sender_timeout": "90s",
        "settings": {"shared_buffers": "256MB", "statement_timeout": 1500, "app.flavour": "mint"}}})
    state = ServerState(scenario, limits=Limits(wal_sender_timeout=90.0, max_connections=30))
    c = _client(state)
    out = _ok(c.query("SELECT name, setting, unit, vartype FROM pg_settings ORDER BY name"))
    assert _columns(out) == [("name", 25), ("setting", 25), ("unit", 25), ("vartype", 25)]
    rows = _rows(out)
    names = [r[0] for r in rows]
    assert {"wal_level", "max_replication_slots", "server_version_num", "TimeZone"} <= set(names)
    # GUC_NO_SHOW_ALL: SHOW only (a placeholder: a name PostgreSQL does not know)
    assert "is_superuser" not in names and "app.flavour" not in names
    assert _rows(_ok(c.query("SHOW app.flavour"))) == _rows(_ok(c.query("SELECT current_setting('app.flavour')")))
    assert _rows(_ok(c.query("SHOW app.flavour"))) == [("mint",)]
    # SHOW ALL: the same settings, SHOW's text and the description
    out = _ok(c.query("SHOW ALL"))
    assert _columns(out) == [("name", 25), ("setting", 25), ("description", 25)]
    shown_all = {r[0]: r[1] for r in _rows(out)}
    assert list(shown_all) == sorted(names, key=str.lower)  # guc.c's order: names case-insensitively
    assert ("logical_decoding_work_mem" in names) == (major >= 13)
    for name, value, unit, vartype in rows:
        assert name is not None and value is not None
        shown = _rows(_ok(c.query(f'SHOW "{name}"')))
        current = _rows(_ok(c.query(f"SELECT current_setting('{name}')")))
        expected = value
        if unit is not None:
            setting = lookup(name, major)
            assert setting is not None and vartype == "integer"
            expected = show_text(setting, value)
        assert shown == current == [(expected,)], name
        assert shown_all[name] == expected, name
    by_name = {r[0]: r[1:] for r in rows}
    assert by_name["shared_buffers"] == ("32768", "8kB", "integer")
    assert by_name["statement_timeout"] == ("1500", "ms", "integer")
    assert by_name["wal_sender_timeout"] == ("90000", "ms", "integer")
    assert by_name["max_connections"] == ("30", None, "integer")
    assert by_name["server_version_num"][0] == f"{major}0002"


def test_pg_settings_as_clients_read_it() -> None:
    """The queries of Debezium- and pgjdbc-style clients; an unknown name is no row in
    pg_settings (names as guc_tables.c spells them) and 42704 for SHOW."""
    c = _client(_state(15))
    out = _ok(c.query("SELECT name, setting, unit, vartype, context, enumvals, boot_val, min_val, max_val "
                      "FROM pg_settings WHERE name IN ('wal_level', 'max_replication_slots', 'wal_sender_timeout') "
                      "ORDER BY name"))
    assert _rows(out) == [
        ("max_replication_slots", "10", None, "integer", "postmaster", None, "10", "0", "262143"),
        ("wal_level", "logical", None, "enum", "postmaster", "{minimal,replica,logical}", "replica", None, None),
        ("wal_sender_timeout", "60000", "ms", "integer", "user", None, "60000", "0", "2147483647")]
    assert _columns(out)[5] == ("enumvals", 1009)
    assert _rows(_ok(c.query("SELECT setting FROM pg_settings WHERE name = 'timezone'"))) == []
    assert _rows(_ok(c.query("SELECT setting FROM pg_catalog.pg_settings WHERE name = 'TimeZone'"))) == [
        ("Etc/UTC",)]
    assert _error(c.query("SHOW no_such_setting")) == ("42704", 'unrecognized configuration parameter '
                                                                 '"no_such_setting"')
