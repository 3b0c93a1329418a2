"""The server settings the fake knows: one table, from which ``SHOW``, ``current_setting()``
and the rows of ``pg_settings`` are all derived.

Each row is a setting as ``guc_tables.c`` declares it (name as spelled there, type,
context, category, short description, boot value, base unit, bounds, enum values) and the
fake's own value when it is not the boot value. A value is kept in the setting's base unit
(``wal_sender_timeout`` in ms, ``shared_buffers`` in 8 kB blocks); ``SHOW`` writes it in the
largest unit that divides it (guc.c ``ShowGUCOption``, ``convert_int_from_base_unit``).
What the scenario says (``server.settings``, ``server.encoding``,
``server.logical_decoding_work_mem``) and the limits the fake enforces
(``wal_sender_timeout``, ``authentication_timeout``, ``max_connections``) replace the
fake's defaults. Texts are those of PostgreSQL 15 and 16 (categories and descriptions
change a little between majors); ``since``/``until`` bound a setting's majors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .scenario import Limits, ServerInfo

__all__ = ["Setting", "SETTINGS", "SettingError", "lookup", "show_text", "parse_value", "values",
           "settings_rows", "show_all", "version_num", "check_scenario_setting",
           "SCENARIO_KEYS"]


class SettingError(ValueError):
    """A setting's value the setting cannot take: what was expected, what was found."""

    def __init__(self, expected: str, found: str) -> None:
        super().__init__(f"expected {expected}, found {found}")
        self.expected = expected
        self.found = found


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    #: bool | integer | real | string | enum (pg_settings.vartype)
    vartype: str
    #: internal | postmaster | sighup | superuser-backend | backend | superuser | user
    context: str
    category: str
    short_desc: str
    #: boot_val as pg_settings shows it (in the base unit); None: the value (a preset
    #: option compiled in, such as server_version).
    boot: str | None
    #: The fake's value when nothing overrides it; None: the boot value.
    value: str | None = None
    #: The base unit (pg_settings.unit): B, kB, 8kB, MB, ms, s, min.
    unit: str | None = None
    #: min_val, max_val; "=": the value itself (server_version_num).
    min: str | None = None
    max: str | None = None
    enumvals: tuple[str, ...] | None = None
    since: int = 10
    until: int | None = None
    #: GUC_NO_SHOW_ALL: answered by SHOW, not listed in pg_settings (is_superuser).
    hidden: bool = False

    def exists(self, major: int) -> bool:
        return self.since <= major and (self.until is None or major < self.until)


_PRESET = "Preset Options"
_AUTH = "Connections and Authentication / Authentication"
_CONN = "Connections and Authentication / Connection Settings"
_LOCALE = "Client Connection Defaults / Locale and Formatting"
_STATEMENT = "Client Connection Defaults / Statement Behavior"
_SENDING = "Replication / Sending Servers"
_WAL = "Write-Ahead Log / Settings"
_MEMORY = "Resource Usage / Memory"
_CHECKPOINTS = "Write-Ahead Log / Checkpoints"
_STANDBY = "Replication / Standby Servers"
_INT_MAX = "2147483647"
_MAX_BACKENDS = "262143"  # MAX_BACKENDS (postmaster.h)
_ISOLATION = ("serializable", "repeatable read", "read committed", "read uncommitted")

#: The settings the fake knows (guc_tables.c), in name order.
SETTINGS: tuple[Setting, ...] = (
    Setting("authentication_timeout", "integer", "sighup", _AUTH,
            "Sets the maximum allowed time to complete client authentication.", "60", unit="s", min="1", max="600"),
    Setting("block_size", "integer", "internal", _PRESET, "Shows the size of a disk block.", "8192",
            min="8192", max="8192"),
    Setting("bytea_output", "enum", "user", _STATEMENT, "Sets the output format for bytea.", "hex",
            enumvals=("escape", "hex")),
    Setting("checkpoint_timeout", "integer", "sighup", _CHECKPOINTS,
            "Sets the maximum time between automatic WAL checkpoints.", "300", unit="s", min="30", max="86400"),
    Setting("client_encoding", "string", "user", _LOCALE, "Sets the client's character set encoding.",
            "SQL_ASCII", value="UTF8"),
    Setting("client_min_messages", "enum", "user", _STATEMENT, "Sets the message levels that are sent to the client.",
            "notice", enumvals=("debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error")),
    # shown in octal (guc_tables.c show_data_directory_mode), booted as a number
    Setting("data_directory_mode", "integer", "internal", _PRESET, "Shows the mode of the data directory.",
            "448", value="0700", min="0", max="511", since=11),
    Setting("DateStyle", "string", "user", _LOCALE, "Sets the display format for date and time values.",
            "ISO, MDY"),
    Setting("default_transaction_isolation", "enum", "user", _STATEMENT,
            "Sets the transaction isolation level of each new transaction.", "read committed", enumvals=_ISOLATION),
    Setting("default_transaction_read_only", "bool", "user", _STATEMENT,
            "Sets the default read-only status of new transactions.", "off"),
    Setting("extra_float_digits", "integer", "user", _LOCALE,
            "Sets the number of digits displayed for floating-point values.", "1", min="-15", max="3"),
    Setting("hot_standby", "bool", "postmaster", _STANDBY, "Allows connections and queries during recovery.", "on"),
    Setting("idle_in_transaction_session_timeout", "integer", "user", _STATEMENT,
            "Sets the maximum allowed idle time between queries, when in a transaction.", "0", unit="ms",
            min="0", max=_INT_MAX),
    Setting("in_hot_standby", "bool", "internal", _PRESET, "Shows whether hot standby is currently active.", "off",
            since=14),
    Setting("integer_datetimes", "bool", "internal", _PRESET, "Shows whether datetimes are integer based.", "on"),
    Setting("IntervalStyle", "enum", "user", _LOCALE, "Sets the display format for interval values.", "postgres",
            enumvals=("postgres", "postgres_verbose", "sql_standard", "iso_8601")),
    Setting("is_superuser", "bool", "internal", _PRESET, "Shows whether the current user is a superuser.", "off",
            value="on", hidden=True),
    Setting("lock_timeout", "integer", "user", _STATEMENT,
            "Sets the maximum allowed duration of any wait for a lock.", "0", unit="ms", min="0", max=_INT_MAX),
    Setting("logical_decoding_work_mem", "integer", "user", _MEMORY,
            "Sets the maximum memory to be used for logical decoding.", "65536", unit="kB", min="64", max=_INT_MAX,
            since=13),
    Setting("maintenance_work_mem", "integer", "user", _MEMORY,
            "Sets the maximum memory to be used for maintenance operations.", "65536", unit="kB", min="1024",
            max=_INT_MAX, until=18),
    Setting("maintenance_work_mem", "integer", "user", _MEMORY,
            "Sets the maximum memory to be used for maintenance operations.", "65536", unit="kB", min="64",
            max=_INT_MAX, since=18),
    Setting("max_connections", "integer", "postmaster", _CONN, "Sets the maximum number of concurrent connections.",
            "100", min="1", max=_MAX_BACKENDS),
    Setting("max_locks_per_transaction", "integer", "postmaster", "Lock Management",
            "Sets the maximum number of locks per transaction.", "64", min="10", max=_INT_MAX),
    Setting("max_logical_replication_workers", "integer", "postmaster", "Replication / Subscribers",
            "Maximum number of logical replication worker processes.", "4", min="0", max=_MAX_BACKENDS),
    Setting("max_prepared_transactions", "integer", "postmaster", _MEMORY,
            "Sets the maximum number of simultaneously prepared transactions.", "0", min="0", max=_MAX_BACKENDS),
    Setting("max_replication_slots", "integer", "postmaster", _SENDING,
            "Sets the maximum number of simultaneously defined replication slots.", "10", min="0", max=_MAX_BACKENDS),
    Setting("max_slot_wal_keep_size", "integer", "sighup", _SENDING,
            "Sets the maximum WAL size that can be reserved by replication slots.", "-1", unit="MB", min="-1",
            max=_INT_MAX, since=13),
    Setting("max_sync_workers_per_subscription", "integer", "sighup", "Replication / Subscribers",
            "Maximum number of table synchronization workers per subscription.", "2", min="0", max=_MAX_BACKENDS),
    Setting("max_wal_senders", "integer", "postmaster", _SENDING,
            "Sets the maximum number of simultaneously running WAL sender processes.", "10", min="0",
            max=_MAX_BACKENDS),
    Setting("max_wal_size", "integer", "sighup", _CHECKPOINTS, "Sets the WAL size that triggers a checkpoint.", "1024",
            unit="MB", min="2", max=_INT_MAX),
    Setting("max_worker_processes", "integer", "postmaster", "Resource Usage / Asynchronous Behavior",
            "Maximum number of concurrent worker processes.", "8", min="0", max=_MAX_BACKENDS),
    Setting("min_wal_size", "integer", "sighup", _CHECKPOINTS, "Sets the minimum size to shrink the WAL to.", "80",
            unit="MB", min="2", max=_INT_MAX),
    Setting("password_encryption", "enum", "user", _AUTH, "Chooses the algorithm for encrypting passwords.",
            "scram-sha-256", enumvals=("md5", "scram-sha-256"), since=14),
    Setting("scram_iterations", "integer", "user", _AUTH, "Sets the iteration count for SCRAM secret generation.",
            "4096", min="1", max=_INT_MAX, since=16),
    Setting("search_path", "string", "user", _STATEMENT,
            "Sets the schema search order for names that are not schema-qualified.", '"$user", public'),
    Setting("server_encoding", "string", "internal", _PRESET, "Shows the server (database) character set encoding.",
            "SQL_ASCII", value="UTF8"),
    Setting("server_version", "string", "internal", _PRESET, "Shows the server version.", None),
    Setting("server_version_num", "integer", "internal", _PRESET, "Shows the server version as an integer.", None,
            min="=", max="="),
    Setting("session_replication_role", "enum", "superuser", _STATEMENT,
            "Sets the session's behavior for triggers and rewrite rules.", "origin",
            enumvals=("origin", "replica", "local")),
    Setting("shared_buffers", "integer", "postmaster", _MEMORY,
            "Sets the number of shared memory buffers used by the server.", "16384", unit="8kB", min="16",
            max="1073741823"),
    Setting("standard_conforming_strings", "bool", "user",
            "Version and Platform Compatibility / Previous PostgreSQL Versions",
            "Causes '...' strings to treat backslashes literally.", "on"),
    Setting("statement_timeout", "integer", "user", _STATEMENT, "Sets the maximum allowed duration of any statement.",
            "0", unit="ms", min="0", max=_INT_MAX),
    Setting("synchronous_commit", "enum", "user", _WAL, "Sets the current transaction's synchronization level.",
            "on", enumvals=("local", "remote_write", "remote_apply", "on", "off")),
    Setting("synchronous_standby_names", "string", "sighup", "Replication / Primary Server",
            "Number of synchronous standbys and list of names of potential synchronous ones.", ""),
    Setting("TimeZone", "string", "user", _LOCALE, "Sets the time zone for displaying and interpreting time stamps.",
            "GMT", value="Etc/UTC"),
    Setting("track_commit_timestamp", "bool", "postmaster", _SENDING, "Collects transaction commit time.", "off"),
    Setting("transaction_isolation", "enum", "user", _STATEMENT, "Sets the current transaction's isolation level.",
            "read committed", enumvals=_ISOLATION),
    Setting("wal_block_size", "integer", "internal", _PRESET, "Shows the block size in the write ahead log.", "8192",
            min="8192", max="8192"),
    Setting("wal_keep_size", "integer", "sighup", _SENDING, "Sets the size of WAL files held for standby servers.",
            "0", unit="MB", min="0", max=_INT_MAX, since=13),
    Setting("wal_level", "enum", "postmaster", _WAL, "Sets the level of information written to the WAL.", "replica",
            value="logical", enumvals=("minimal", "replica", "logical")),
    # In 8 kB blocks up to 10 (2048), in bytes from 11 (xlog.c: wal_segment_size in bytes).
    Setting("wal_log_hints", "bool", "postmaster", _WAL, "Writes full pages to WAL when first modified after a "
            "checkpoint, even for a non-critical modification.", "off"),
    Setting("wal_receiver_timeout", "integer", "sighup", _STANDBY,
            "Sets the maximum wait time to receive data from the sending server.", "60000", unit="ms", min="0",
            max=_INT_MAX),
    Setting("wal_segment_size", "integer", "internal", _PRESET, "Shows the size of write ahead log segments.",
            "2048", unit="8kB", min="2048", max="2048", until=11),
    Setting("wal_segment_size", "integer", "internal", _PRESET, "Shows the size of write ahead log segments.",
            "16777216", unit="B", min="1048576", max="1073741824", since=11),
    Setting("wal_sender_timeout", "integer", "user", _SENDING, "Sets the maximum time to wait for WAL replication.",
            "60000", unit="ms", min="0", max=_INT_MAX),
    Setting("work_mem", "integer", "user", _MEMORY, "Sets the maximum memory to be used for query workspaces.", "4096",
            unit="kB", min="64", max=_INT_MAX),
)

#: Sizes of the units, in bytes (memory) and milliseconds (time), largest first
#: (guc.c memory_unit_conversion_table, time_unit_conversion_table).
_MEMORY_UNITS: dict[str, int | Fraction] = {"TB": 1 << 40, "GB": 1 << 30, "MB": 1 << 20, "kB": 1 << 10, "B": 1}
_TIME_UNITS: dict[str, int | Fraction] = {"d": 86_400_000, "h": 3_600_000, "min": 60_000, "s": 1000, "ms": 1, "us": Fraction(1, 1000)}
_BASE_SIZES = {"B": 1, "kB": 1 << 10, "8kB": 8 << 10, "MB": 1 << 20, "ms": 1, "s": 1000, "min": 60_000}


def _units(unit: str) -> Mapping[str, int | Fraction]:
    return _TIME_UNITS if unit in ("ms", "s", "min") else _MEMORY_UNITS


def lookup(name: str, major: int) -> Setting | None:
    """The setting named *name* (any letter case, as GUC names are matched) in *major*."""
    low = name.lower()
    for s in SETTINGS:
        if s.name.lower() == low and s.exists(major):
            return s
    return None


def _number(value: str) -> Fraction:
    return Fraction(value)


def _plain(value: Fraction) -> str:
    """A number as pg_settings writes one (an integer, or a decimal for the fake's
    sub-second limits, which PostgreSQL cannot hold)."""
    if value.denominator == 1:
        return str(value.numerator)
    return format(float(value), "g")


def show_text(setting: Setting, value: str) -> str:
    """*value* (in the base unit) as ``SHOW`` writes it: an integer with a unit in the
    largest unit that divides it exactly, else the first unit smaller than the base unit
    (guc.c convert_int_from_base_unit; the base unit divides any value PostgreSQL can hold,
    the smaller ones serve the fake's sub-second limits); 0 and negatives bare."""
    if setting.vartype != "integer" or setting.unit is None:
        return value
    base = _number(value)
    if base <= 0:
        return _plain(base)
    size = _BASE_SIZES[setting.unit]
    total = base * size
    for unit, unit_size in _units(setting.unit).items():
        if unit_size < size or total % unit_size == 0:
            return f"{round(total / unit_size)}{unit}"
    return _plain(base)  # unreachable: the smallest unit is never larger than the base unit


_BOOL_WORDS = {"on": True, "off": False, "true": True, "false": False, "yes": True, "no": False, "1": True,
               "0": False, "t": True, "f": False, "y": True, "n": False}


def parse_value(setting: Setting, raw: Any) -> str:
    """A value given for *setting* (a scenario's, as in postgresql.conf: ``30s``, ``64MB``,
    ``on``) in the setting's base unit, checked as guc.c checks it (parse_int with units,
    parse_bool, the enum's values, the bounds); SettingError if it cannot be one."""
    text = str(raw).strip() if not isinstance(raw, bool) else ("on" if raw else "off")
    if setting.vartype == "bool":
        word = _BOOL_WORDS.get(text.lower())
        if word is None:
            raise SettingError(f"a boolean for {setting.name} (on, off, true, false)", repr(raw))
        return "on" if word else "off"
    if setting.vartype == "enum":
        assert setting.enumvals is not None
        for v in setting.enumvals:
            if v == text.lower():
                return v
        raise SettingError(f"one of {', '.join(setting.enumvals)} for {setting.name}", repr(raw))
    if setting.vartype != "integer":
        return text
    m = re.fullmatch(r"(-?\d{1,30}(?:\.\d{1,30})?)\s*([A-Za-z]+)?", text)
    units = _units(setting.unit) if setting.unit else {}
    if m is None or (m.group(2) is not None and m.group(2) not in units):
        what = f"an integer with a unit ({', '.join(units)})" if units else "an integer"
        raise SettingError(f"{what} for {setting.name}", repr(raw))
    number = Fraction(m.group(1))
    if m.group(2) is not None and setting.unit is not None:
        number = number * units[m.group(2)] / _BASE_SIZES[setting.unit]
    number = Fraction(round(number))  # guc.c parse_int rounds (rint) what is not whole
    if setting.min not in (None, "=") and setting.max not in (None, "="):
        assert setting.min is not None and setting.max is not None
        if not int(setting.min) <= number <= int(setting.max):
            unit = f" {setting.unit}" if setting.unit else ""
            raise SettingError(f"{setting.name} from {setting.min} to {setting.max}{unit}", repr(raw))
    return _plain(number)


#: Settings a scenario gives elsewhere (the key of its ``server:`` section that sets them):
#: ``server.settings`` may not name them, so that what SHOW reports is what the fake does.
SCENARIO_KEYS = {"server_version": "version", "server_version_num": "version", "server_encoding": "encoding",
                 "logical_decoding_work_mem": "logical_decoding_work_mem",
                 "wal_sender_timeout": "wal_sender_timeout", "authentication_timeout": "authentication_timeout",
                 "max_connections": "max_connections"}


def check_scenario_setting(name: str, raw: Any, major: int) -> None:
    """A scenario's ``server.settings`` entry, checked: SettingError if the setting is set
    by another key or cannot take the value."""
    key = SCENARIO_KEYS.get(name.lower())
    if key is not None:
        raise SettingError(f"{name} set by server.{key} (what the fake does), not by server.settings",
                           f"{name}: {raw!r}")
    known = lookup(name, major)
    if known is not None:
        parse_value(known, raw)


def version_num(version: str) -> str:
    """server_version_num of a version text: 16.4 -> 160004."""
    m = re.match(r"(\d+)(?:\.(\d+))?", version)
    assert m is not None
    return str(int(m.group(1)) * 10000 + int(m.group(2) or 0))


def values(server: ServerInfo, version: str, limits: Limits) -> dict[str, str]:
    """Each setting's value in force, by name as spelled in :data:`SETTINGS` (base units),
    with the scenario's extra settings under their own names."""
    major = server.major
    out = {s.name: s.value if s.value is not None else (s.boot or "") for s in SETTINGS if s.exists(major)}
    out["server_version"] = version
    out["server_version_num"] = version_num(version)
    out["server_encoding"] = server.encoding
    for name, value in server.settings:
        known = lookup(name, major)
        out[known.name if known else name] = parse_value(known, value) if known else value
    if "logical_decoding_work_mem" in out:
        out["logical_decoding_work_mem"] = str(server.logical_decoding_work_mem // 1024)
    # The limits the fake enforces, as in force (the scenario's or the command line's).
    out["wal_sender_timeout"] = _plain(Fraction(str(limits.wal_sender_timeout)) * 1000)
    out["authentication_timeout"] = _plain(Fraction(str(limits.authentication_timeout)))
    out["max_connections"] = str(limits.max_connections)
    return out


def settings_rows(server: ServerInfo, version: str, limits: Limits) -> list[dict[str, Any]]:
    """``pg_settings``' rows (system_views.sql: pg_show_all_settings()), in name order as
    guc.c sorts them (case-insensitively). A scenario's setting the table does not know is
    what PostgreSQL makes of a name it does not know, a placeholder (guc.c
    add_placeholder_variable: GUC_NO_SHOW_ALL): SHOW and current_setting() give it, this
    view and SHOW ALL do not."""
    major = server.major
    current = values(server, version, limits)
    rows = []
    for name, value in current.items():
        s = lookup(name, major)
        if s is None or s.hidden:
            continue
        boot = s.boot if s.boot is not None else value
        fixed = {"=": value}
        rows.append({
            "name": s.name, "setting": value, "unit": s.unit, "category": s.category, "short_desc": s.short_desc,
            "extra_desc": None, "context": s.context, "vartype": s.vartype,
            # preset options are compiled in or set by initdb: never from a file
            "source": "default" if value == boot or s.context == "internal" else "configuration file",
            "min_val": fixed.get(s.min or "", s.min), "max_val": fixed.get(s.max or "", s.max),
            "enumvals": list(s.enumvals) if s.enumvals is not None else None, "boot_val": boot,
            "reset_val": value, "sourcefile": None, "sourceline": None, "pending_restart": False})
    return sorted(rows, key=lambda r: str(r["name"]).lower())


def show_all(server: ServerInfo, version: str, limits: Limits) -> list[tuple[str, str, str]]:
    """``SHOW ALL``: (name, SHOW's text, short description) of pg_settings' rows (guc.c
    ShowAllGUCConfig)."""
    major = server.major
    out = []
    for row in settings_rows(server, version, limits):
        s = lookup(row["name"], major)
        assert s is not None
        out.append((s.name, show_text(s, row["setting"]), s.short_desc))
    return out
