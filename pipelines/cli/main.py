"""``logdir-gc``: one click group whose commands are imported only when used.

Each command lives in its own module; ``COMMANDS`` maps the command name to ``module:attribute``. Lazy loading
keeps ``logdir-gc inspect`` on a broker host free of Spark and fast to start.
"""

from __future__ import annotations

import importlib
import sys
from types import MappingProxyType

import click

from pipelines.cli import fast_exit
from pipelines.cli.exit_codes import code_for
from pipelines.redaction import redact_text
from pipelines.terminal_text import shown

COMMANDS: MappingProxyType[str, str] = MappingProxyType(
    {
        "inspect": "pipelines.cli.inspect_cmd:inspect",
        "metadata": "pipelines.cli.metadata_cmd:metadata",
        "simulate": "pipelines.cli.simulate_cmd:simulate",
        "inventory": "pipelines.cli.inventory_cmd:inventory",
        "run": "pipelines.cli.run_cmd:run",
        "demo": "pipelines.cli.run_cmd:demo",
        "plans": "pipelines.cli.plans_cmd:plans",
        "apply": "pipelines.cli.execute_cmd:apply",
        "restore": "pipelines.cli.execute_cmd:restore",
        "purge": "pipelines.cli.execute_cmd:purge",
        "prestart": "pipelines.cli.execute_cmd:prestart",
        "report": "pipelines.cli.report_cmd:report",
        "warehouse": "pipelines.cli.warehouse_cmd:warehouse",
        "package": "pipelines.cli.package_cmd:package",
    }
)


class LazyGroup(click.Group):
    """A group that imports a command's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            return None
        return getattr(module, attr)


@click.group(cls=LazyGroup)
@click.version_option(package_name="kafka-logdir-gc")
def cli() -> None:
    """Find, measure and safely reclaim Kafka partition directories the cluster no longer owns."""


def main(argv: list[str] | None = None) -> None:
    """Console entry point: errors of the project's families become one line on stderr and an exit code."""
    if argv is None:
        fast_exit.arm()
    try:
        code = cli.main(args=argv, prog_name="logdir-gc", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:
        code = code_for(exc)  # re-raises anything that is not one of our families: a bug shows its traceback
        click.echo(f"logdir-gc: error: {shown(redact_text(str(exc)), 2000)}", err=True)
        sys.exit(code)
    code = code if isinstance(code, int) else 0
    fast_exit.finish(code)
    sys.exit(code)


if __name__ == "__main__":
    main()
