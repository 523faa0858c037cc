"""Checks of compose.yaml with the built image, run by scripts/container-test after container_checks.py.

This machine reaches no container registry, so the official `postgres` image is replaced by a local
one (e2e/postgres-image: Debian's PostgreSQL on the runtime base image that container-test made) through
compose.yaml's `POSTGRES_IMAGE` variable, and the gateways run the image container-test built (no second
build). The services are started with plain `podman run` from what compose.yaml says — each service's
image, environment (with compose's `${VAR}`, `${VAR:-default}`, `${VAR:?message}` interpolation),
named volumes, and `depends_on` order. The balancer (nginx image) is not started.

Networks: PostgreSQL runs on a private podman network, as in `docker compose up`. The gateways run on
the host's network instead, each on a free loopback port (GATEHOUSE_LISTEN, the one variable added to
compose.yaml's environment), with `postgres` resolving to the PostgreSQL container (`--add-host`):
readiness needs the OpenID provider's discovery, and Gatehouse accepts a plain-http issuer only on
loopback, where the e2e provider (e2e/provider_server.py) runs.

Checks: the PostgreSQL image builds; the `postgres` service passes the health check compose.yaml
declares; both gateways start against it and answer `/readyz` with 200 (database reached, migrations
applied, the provider's discovery loaded).

Environment: as container_checks.py, plus CONTAINER_TEST_RUNTIME_BASE (the image the PostgreSQL image
is built FROM). Prints PASS/FAIL per check and `N passed, N failed`; exit 1 when one failed.
"""

from __future__ import annotations

import os
import re
import secrets
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import requests  # noqa: E402
import yaml  # noqa: E402

import harness  # noqa: E402
from container_checks import KEEP, RESULTS, RUN_FLAGS, IMAGE, check, podman, running, save_logs, wait_until  # noqa: E402
from harness import Provider, free_port, random_secret_key  # noqa: E402

E2E_DIR = Path(__file__).resolve().parent
COMPOSE = E2E_DIR.parent / "compose.yaml"
POSTGRES_IMAGE = "localhost/gatehouse-postgres:container-test"
RUNTIME_BASE = os.environ.get("CONTAINER_TEST_RUNTIME_BASE", "docker.io/library/debian:bookworm-slim")
TAG = secrets.token_hex(4)
PREFIX = f"gatehouse-ct-{TAG}"

_VARIABLE = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def interpolate(value, variables: dict[str, str]):
    """Compose's variable syntax in a scalar: `$$`, `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`,
    `${VAR:?message}`, `${VAR?message}` (a missing required variable is an error, as in compose)."""
    if not isinstance(value, str):
        return value

    def one(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1) or match.group(4)
        operator, argument = match.group(2), match.group(3) or ""
        present = variables.get(name)
        unset = present is None or (operator is not None and operator.startswith(":") and present == "")
        if operator and operator.endswith("-"):
            return argument if unset else present
        if operator and operator.endswith("?"):
            if unset:
                raise AssertionError(f"compose.yaml: {name} is required: {argument}")
            return present
        return present or ""

    return _VARIABLE.sub(one, value)


def environment_of(service: dict, variables: dict[str, str]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, variables.get(item, "")) for item in env)
    return {key: str(interpolate(value, variables)) for key, value in env.items()}


def start_order(services: dict, wanted: list[str]) -> list[str]:
    """`wanted` and what they depend on, dependencies first."""
    order: list[str] = []

    def visit(name: str, path: tuple[str, ...]):
        assert name not in path, f"compose.yaml: depends_on cycle {path + (name,)}"
        if name in order:
            return
        depends = services[name].get("depends_on") or []
        for dependency in (depends if isinstance(depends, list) else list(depends)):
            visit(dependency, path + (name,))
        order.append(name)

    for name in wanted:
        visit(name, ())
    return order


def http_status(url: str) -> tuple[int, str]:
    try:
        r = requests.get(url, timeout=5)
        return r.status_code, r.text.strip()
    except requests.RequestException as e:
        return 0, str(e)


def main() -> int:
    work = harness.ARTIFACTS / "container" / "compose-work"
    compose = yaml.safe_load(COMPOSE.read_text())
    services: dict = compose["services"]
    gateways = [name for name, service in services.items() if service.get("build") is not None]
    network = PREFIX
    containers: dict[str, str] = {}  # service -> container
    addresses: dict[str, str] = {}  # service on the private network -> its address there
    urls: dict[str, str] = {}  # gateway -> its URL on loopback
    volumes: dict[str, str] = {name: f"{PREFIX}-{name}" for name in (compose.get("volumes") or {})}
    provider: Provider | None = None
    network_made = False

    @check("the local PostgreSQL image (e2e/postgres-image: Debian's postgresql-15) builds")
    def _():
        podman("build", "-q", "--pull=never", "--network=host", *RUN_FLAGS,
               "--build-arg", f"BASE={RUNTIME_BASE}", "-t", POSTGRES_IMAGE, str(E2E_DIR / "postgres-image"),
               timeout=900)
        return POSTGRES_IMAGE

    try:
        variables: dict[str, str] = {}

        @check("the e2e OpenID provider starts on loopback")
        def _():
            nonlocal provider
            provider = Provider(work, name="compose-provider")
            provider.register_redirect("http://localhost:8080/callback")
            variables.update({
                "POSTGRES_IMAGE": POSTGRES_IMAGE,
                "POSTGRES_PASSWORD": secrets.token_urlsafe(18),
                "GATEHOUSE_SECRET_KEY": random_secret_key(),
                "GATEHOUSE_ISSUER": provider.issuer,
                "GATEHOUSE_CLIENT_ID": provider.client_id,
                "GATEHOUSE_CLIENT_SECRET": provider.client_secret,
            })

        def run_service(name: str):
            nonlocal network_made
            service = services[name]
            image = IMAGE if name in gateways else interpolate(service["image"], variables)
            environment = environment_of(service, variables)
            args = ["run", "-d", "--name", f"{PREFIX}-{name}", *RUN_FLAGS]
            if name in gateways:
                urls[name] = f"http://127.0.0.1:{free_port()}"
                environment["GATEHOUSE_LISTEN"] = urls[name].removeprefix("http://")
                args += ["--network=host"] + [f"--add-host={n}:{ip}" for n, ip in addresses.items()]
            else:
                args += ["--network", network, "--network-alias", name]
            for key, value in environment.items():
                args += ["-e", f"{key}={value}"]
            for mount in service.get("volumes") or []:
                source, _, target = mount.partition(":")
                assert source in volumes, f"{name}: only named volumes are run here, not {mount}"
                args += ["-v", f"{volumes[source]}:{target}"]
            if not network_made:
                podman("network", "create", network)
                network_made = True
            containers[name] = f"{PREFIX}-{name}"  # removed afterwards even when `run` fails half-way
            podman(*args, image)
            if name not in gateways:
                addresses[name] = podman("inspect", "--format",
                                         f'{{{{(index .NetworkSettings.Networks "{network}").IPAddress}}}}',
                                         containers[name]).stdout.strip()

        def healthy(name: str) -> bool:
            test = services[name]["healthcheck"]["test"]
            argv = test[1:] if test[0] == "CMD" else ["/bin/sh", "-c", test[1]]
            return podman("exec", containers[name], *argv, check=False).returncode == 0

        order = start_order(services, gateways)
        dependencies = [name for name in order if name not in gateways]

        @check(f"compose.yaml's {', '.join(dependencies)}: starts with its environment and named volume, "
               "passes its declared healthcheck")
        def _():
            assert variables, "no provider"
            for name in dependencies:
                run_service(name)
                container = containers[name]
                wait_until(lambda: not running(container) or healthy(name), f"{name} healthy", timeout=120,
                           interval=0.5)
                assert running(container), podman("logs", container, check=False).stderr[-800:]
            return ", ".join(f"{n}: {interpolate(services[n]['image'], variables)}" for n in dependencies)

        @check(f"compose.yaml's {' and '.join(gateways)} start against PostgreSQL and answer /readyz with 200")
        def _():
            assert all(name in containers and running(containers[name]) for name in dependencies), \
                "the dependencies did not start"
            for name in gateways:
                run_service(name)
            answers = []
            for name in gateways:
                container = containers[name]
                wait_until(lambda: not running(container) or http_status(urls[name] + "/readyz")[0] == 200,
                           f"{name} /readyz", timeout=90, interval=0.5)
                status, body = http_status(urls[name] + "/readyz")
                assert running(container) and status == 200, \
                    f"{name}: /readyz {status} {body[:300]}; log: {podman('logs', container, check=False).stderr[-800:]}"
                answers.append(f"{name} {status} {body}")
            # They store in PostgreSQL (their migrations made its tables), not in a SQLite file of their own.
            database = environment_of(services[gateways[0]], variables)["GATEHOUSE_DATABASE"]
            assert database.startswith("postgres"), database
            environment = environment_of(services["postgres"], variables)
            tables = podman("exec", containers["postgres"], "psql", "-U", environment["POSTGRES_USER"],
                            "-d", environment["POSTGRES_DB"], "-tAc",
                            "SELECT string_agg(table_name, ' ' ORDER BY table_name) FROM information_schema.tables"
                            " WHERE table_schema = 'public'").stdout.strip()
            assert tables, "no tables in PostgreSQL"
            return "; ".join(answers) + f"; PostgreSQL tables: {tables}"

        @check("the release gateways reuse their PostgreSQL connections: 150 /readyz each (a store round trip "
               "apiece) all 200, and the pools hold at most 4 connections per gateway")
        def _():
            assert all(name in urls for name in gateways), "the gateways did not start"
            # A release build once lost libpq's function table to the optimiser: every transaction
            # opened a connection and none was closed, until PostgreSQL refused clients (the debug
            # build used by the other suites was fine).
            for name in gateways:
                statuses = [http_status(urls[name] + "/readyz")[0] for _ in range(150)]
                assert statuses.count(200) == len(statuses), f"{name}: /readyz answers {sorted(set(statuses))}"
            environment = environment_of(services["postgres"], variables)
            held = podman("exec", containers["postgres"], "psql", "-U", environment["POSTGRES_USER"],
                          "-d", environment["POSTGRES_DB"], "-tAc",
                          "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'gatehouse'").stdout.strip()
            assert held.isdigit() and 0 < int(held) <= 4 * len(gateways), f"gateway connections held: {held}"
            return f"{held} connections held by {len(gateways)} gateways"
    finally:
        for container in containers.values():
            save_logs(container)
        if provider is not None:
            provider.stop()
        if not KEEP:
            for container in containers.values():
                podman("rm", "-f", "-v", "-t", "10", container, check=False, timeout=60)
            for volume in volumes.values():
                podman("volume", "rm", "-f", volume, check=False)
            if network_made:
                podman("network", "rm", "-f", network, check=False)

    passed = sum(1 for _, ok, _ in RESULTS if ok)
    failed = len(RESULTS) - passed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
