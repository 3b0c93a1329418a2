"""``docker``: testcontainers' PostgresContainer (optional extra ``docker``; needs a Docker
engine). The container runs the official ``postgres:<major>`` image with the capture
settings as server arguments."""

from __future__ import annotations

from typing import Any

from ._base import CAPTURE_SETTINGS, Provider, ProviderError, Server, describe_server

__all__ = ["DockerProvider", "docker_available"]


def docker_available() -> str | None:
    """None when a Docker engine answers, else the reason it cannot be used."""
    try:
        import docker
    except ImportError:
        return "the docker extra is not installed (pip install 'pgwire-spec[docker]')"
    try:
        docker.from_env().ping()
    except Exception as exc:  # docker raises many kinds here
        return f"no Docker engine answers ({type(exc).__name__}: {str(exc)[:120]})"
    return None


class DockerProvider(Provider):
    name = "docker"

    def __init__(self, major: int, image: str | None = None,
                 settings: dict[str, str] | None = None) -> None:
        super().__init__()
        self.major = major
        self.image = image or f"postgres:{major}"
        self.settings = {**CAPTURE_SETTINGS, **(settings or {})}
        self.container: Any = None

    def _start(self) -> Server:
        reason = docker_available()
        if reason is not None:
            raise ProviderError(f"expected a Docker engine for provider docker, found {reason}")
        from testcontainers.postgres import PostgresContainer

        args = " ".join(f"-c {k}={v}" for k, v in self.settings.items())
        container = PostgresContainer(self.image, username="postgres", password="postgres", dbname="postgres")
        container.with_command(f"postgres {args}")
        container.with_env("POSTGRES_HOST_AUTH_METHOD", "trust")
        self.container = container
        container.start()
        host = container.get_container_host_ip()
        port = int(container.get_exposed_port(5432))
        return describe_server(self.name, host, port, "postgres", "postgres", password="postgres")

    def _stop(self) -> None:
        container, self.container = self.container, None
        if container is not None:
            container.stop()

    def describe(self) -> str:
        return f"docker {self.image}"
