"""``dsn``: an existing server the user points at. Nothing is started or stopped; capture
drops what it created (slots, publications, its schema) itself."""

from __future__ import annotations

from ._base import Provider, ProviderError, Server, describe_server

__all__ = ["DsnProvider"]


class DsnProvider(Provider):
    name = "dsn"

    def __init__(self, dsn: str) -> None:
        super().__init__()
        # psycopg on first use, as in _base: the providers' table is read by commands that
        # start no server (verify-fixtures), which need not pay for importing it.
        import psycopg.conninfo

        try:
            self.params = psycopg.conninfo.conninfo_to_dict(dsn)
        except psycopg.ProgrammingError as exc:
            raise ProviderError(f"expected a libpq connection string or URI, found {dsn!r}: {exc}") from None
        self.dsn = dsn

    def _start(self) -> Server:
        p = self.params
        return describe_server(
            self.name, str(p.get("host", "localhost")), int(str(p.get("port", 5432))),
            str(p.get("user", "postgres")), str(p.get("dbname", p.get("user", "postgres"))),
            password=None if p.get("password") is None else str(p.get("password")),
        )

    def _stop(self) -> None:
        pass
