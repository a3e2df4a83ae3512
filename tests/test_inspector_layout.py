"""The inspector's parts and the App: no import cycle, the App without mixins, the main screen
holding what it shows, and its parts relying on a stated interface (inspector.host)."""

from __future__ import annotations

import ast
from pathlib import Path

from textual.app import App

import inspector
from inspector.host import Commands, Host

from .inspector_support import app_for, frozen  # noqa: F401 (fixtures)

PACKAGE = Path(inspector.__file__).parent


def module_name(path: Path) -> str:
    """'widgets.views' for inspector/widgets/views.py: the name below ``inspector``."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imported_modules(path: Path) -> set[str]:
    """Every inspector module ``path`` imports (named below ``inspector``), TYPE_CHECKING blocks included."""
    here = module_name(path).split(".")[:-1] if path.name != "__init__.py" else module_name(path).split(".")
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = [p for p in here[: len(here) - (node.level - 1)] if p]
                base += [node.module] if node.module else []
                prefix = ".".join(base)
                found |= {f"{prefix}.{a.name}".lstrip(".") for a in node.names} | ({prefix} if prefix else set())
            elif (node.module or "").startswith("inspector."):
                module = node.module.removeprefix("inspector.")
                found |= {module} | {f"{module}.{a.name}" for a in node.names}
            elif node.module == "inspector":
                found |= {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("inspector.") for a in node.names if a.name.startswith("inspector.")}
    return found & set(MODULES)


def test_the_import_reader_sees_the_subpackages():
    assert {"widgets.views", "screens.dialogs", "cli.main", "app"} <= set(MODULES)
    assert "widgets.views" in imported_modules(MODULES["widgets.tenant_views"]) and "formatting" in imported_modules(
        MODULES["widgets.views"]
    )
    assert "app" in imported_modules(MODULES["cli.tui"]) and "screens.dialogs" in imported_modules(MODULES["screens.timeline"])


def test_nothing_in_the_inspector_imports_the_app_but_its_entry_points():
    importers = {name for name, path in MODULES.items() if "app" in imported_modules(path)}
    # cli.tui is the one CLI module that may start the UI (the CLI split keeps the rest UI-free).
    assert importers <= {"cli.tui"}


def test_widgets_post_messages_and_the_screens_push_the_dialogs():
    """A widget never opens a dialog itself: it says what it loaded or what the user asked for,
    and the screen it is on decides what to show."""
    reaching = {
        name
        for name, path in MODULES.items()
        if name.startswith("widgets.") and any(m.startswith("screens") for m in imported_modules(path))
    }
    assert reaching == set()
    assert "push_screen" not in "".join(
        (PACKAGE / "widgets" / f"{name.removeprefix('widgets.')}.py").read_text() for name in MODULES if name.startswith("widgets.")
    )


def test_the_inspector_modules_import_each_other_without_a_cycle():
    graph = {name: imported_modules(path) - {name} for name, path in MODULES.items()}

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        return any(n == target or (n not in seen and reaches(n, target, seen | {n})) for n in graph[start])

    assert [m for m in graph if reaches(m, m, {m})] == []


def declared(cls) -> set[str]:
    return set(getattr(cls, "__annotations__", {})) | {n for n in vars(cls) if not n.startswith("_")}


def test_the_app_is_built_without_mixins():
    """Its parts are mounted (the tenant list, the tenant views, which hold the search) or opened
    (the dialogs); each of its base classes is Textual's own."""
    from inspector.app import MemlensApp

    bases = MemlensApp.__mro__[1 : MemlensApp.__mro__.index(App)]
    assert bases == () and MemlensApp.__bases__ == (App,)


async def test_the_main_screen_provides_the_whole_interface(demo):
    app = app_for(demo)
    async with app.run_test():
        screen = app.main_screen
        assert isinstance(screen, Host) and isinstance(screen, Commands)
        missing = {name for name in declared(Host) | declared(Commands) if not hasattr(screen, name)}
        assert missing == set()


def used_on(owner: str, path: Path, cls_name: str | None = None) -> set[str]:
    """The names read or called on ``self.<owner>`` in ``path`` (in its class ``cls_name``, if given)."""
    tree: ast.AST = ast.parse(path.read_text())
    if cls_name is not None:
        tree = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name)  # type: ignore[attr-defined]
    return {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Attribute)
        and n.value.attr == owner
        and isinstance(n.value.value, ast.Name)
        and n.value.value.id == "self"
    }


def test_the_search_uses_only_the_host_interface_and_runs_on_its_views_thread():
    """The search is held by the search view, not by the App: what it asks of the App is stated,
    and its thread is the view's worker."""
    used = used_on("host", PACKAGE / "searching.py", "Search")
    assert {"store", "user_id", "as_of", "post_message", "show_timings"} <= used
    assert used - declared(Host) == set()
    assert "run_worker" not in used and "self.view.run_worker" in (PACKAGE / "searching.py").read_text()


def test_the_screens_and_widgets_ask_nothing_of_the_app_but_textuals_own():
    """The main screen holds what it shows and is told of the store's life; no screen or widget
    reaches back into the App for memlens's state (the store, the tenant, the moment)."""
    parts = [p for name, p in MODULES.items() if name.startswith(("screens.", "widgets.")) or name in ("searching", "commands")]
    used = {name: used_on("app", path) for path in parts for name in [module_name(path)]}
    assert "refresh_bindings" in used["widgets.tenant_views"]  # the scan sees what it checks
    plain = App()  # Textual's App as it comes: its attributes, and those its __init__ sets
    beyond = {f"{name}: self.app.{attr}" for name, attrs in used.items() for attr in attrs if attr not in dir(plain)}
    assert beyond == set()
    assert "cast(Host, self.app)" not in "".join(p.read_text() for p in parts)


def test_the_main_screen_holds_the_tenant_state():
    """The tenant, the moment and the tenants listed are the screen's reactives and attributes, not the App's."""
    from inspector.app import MemlensApp
    from inspector.screens.main import MainScreen

    assert {"user_id", "as_of"} <= set(MainScreen._reactives) and not {"user_id", "as_of"} & set(MemlensApp._reactives)
    assert "compose" not in vars(MemlensApp) and "compose" in vars(MainScreen)


def test_the_tenant_views_use_only_the_host_interface():
    """The tenant views get their tenant and moment from bound reactives; what else they ask of the App is stated."""
    used = used_on("host", PACKAGE / "widgets" / "tenant_views.py", "TenantViews")
    assert {"store", "failed", "now"} <= used
    assert used - declared(Host) == set()


def test_every_message_is_a_carrier():
    """One message style: each message the inspector defines derives from messages.Carrier, none is a dataclass."""
    others = []
    for name, path in MODULES.items():
        for cls in (n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)):
            bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in cls.bases}
            decorated = {d.id if isinstance(d, ast.Name) else getattr(d, "attr", "") for d in cls.decorator_list}
            if ("Message" in bases and cls.name != "Carrier") or ("Carrier" in bases and "dataclass" in decorated):
                others.append(f"{name}.{cls.name}")
    assert others == []
    assert "Carrier" in (PACKAGE / "widgets" / "views.py").read_text()  # the scan reads the widgets it checks


def test_a_message_declared_without_postponed_annotations_takes_its_fields():
    """Annotations are strings under ``from __future__ import annotations`` and the types
    themselves without it: a Carrier reads both (a type's ``startswith`` crashed at class creation)."""
    namespace: dict = {}
    source = (
        "from typing import ClassVar\n"
        "from inspector.messages import Carrier\n"
        "class Said(Carrier):\n"
        "    kind: ClassVar[str] = 'said'\n"
        "    text: str\n"
        "    times: int = 1\n"
    )
    exec(compile(source, "said.py", "exec", dont_inherit=True), namespace)  # not this module's __future__ import
    said = namespace["Said"]("hello", times=2)
    assert type(said).fields == ("text", "times") and (said.text, said.times, said.kind) == ("hello", 2, "said")
