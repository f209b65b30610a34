"""The mock device API against the real TT-Metalium 0.81.1 device headers, declaration by declaration.

Both sides are parsed by clang (``-ast-dump``, function bodies skipped) in the same RV32 / newlib type
model that sdkcheck compiles kernels in, each behind the prelude its kernel build puts before a kernel:

* SDK: the wheel's firmware wrappers as sdkcheck drives them (``trisck.cc`` once per TRISC pass with
  the generated ``chlkc_descriptors.h``; ``brisck.cc`` for data movement kernels);
* mock: ``ttmock/jit_compute.h`` (what the emulator's kernel JIT force-includes into compute kernels:
  ``DST_ACCUM_MODE``, ``using namespace ckernel``) or ``api/dataflow/dataflow_api.h`` (force-included
  into data movement kernels, as the SDK's wrapper includes it).

For every public mock device header ``api/...`` (which must exist at the same path in the SDK) and
every declaration visible through it outside namespace ``ttmock`` - functions and function templates
(parameter types, default arguments, template parameters and their defaults, return type,
constexpr / static / const), classes and class templates (their public members, recursively), enums
(underlying type, enumerators and values), variables and type aliases - the SDK must declare the same
entity, equal in all of these, and visible through the same header in every pass; and what the
SDK's header offers of the entities the mock declares, the mock's header offers too. Macros the mock
headers define must be defined by the SDK too. ``python testing/sdk_twin.py`` prints the differences.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MOCK_INCLUDE = ROOT / "tilelang_tt" / "runtime" / "mock" / "include"


def _find_sdkcheck() -> Path:
    """shared/tools/sdkcheck beside the checkout (or beside one of its parents, for worktrees)."""
    if os.environ.get("SDKCHECK_DIR"):
        return Path(os.environ["SDKCHECK_DIR"])
    for parent in ROOT.parents:
        if (parent / "shared" / "tools" / "sdkcheck" / "sdkcheck.py").exists():
            return parent / "shared" / "tools" / "sdkcheck"
    return ROOT.parent / "shared" / "tools" / "sdkcheck"


SDKCHECK_DIR = _find_sdkcheck()
# what the emulator's kernel JIT force-includes (host.cpp), by kernel kind
MOCK_PRELUDE = {"compute": "ttmock/jit_compute.h", "dataflow": "api/dataflow/dataflow_api.h"}
COMPUTE_PASSES = (("UNPACK", 0), ("MATH", 1), ("PACK", 2))


class Unavailable(Exception):
    """The sdkcheck environment (SDK headers, clang) is not set up."""


def load_sdkcheck():
    path = SDKCHECK_DIR / "sdkcheck.py"
    if not path.exists():
        raise Unavailable(f"no sdkcheck at {SDKCHECK_DIR} (set SDKCHECK_DIR)")
    spec = importlib.util.spec_from_file_location("sdkcheck_for_twin", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if not mod.CLANG:
        raise Unavailable("no clang++ for sdkcheck (run sdkcheck's setup.sh)")
    if not (mod.SDK / "tt_metal/hw/inc/api/dataflow/dataflow_api.h").exists():
        raise Unavailable(f"SDK headers not found at {mod.SDK} (run sdkcheck's setup.sh)")
    try:
        mod.stdlib_includes()
    except mod.SetupError as e:
        raise Unavailable(str(e)) from e
    return mod


# ---------------------------------------------------------------------------------------------
# clang's text AST dump -> a tree of lines, each with the file its declaration is in
# ---------------------------------------------------------------------------------------------
@dataclass
class Node:
    kind: str
    text: str  # the rest of the line after the kind
    file: str  # file of the node's location (clang prints a file only when it changes)
    children: list = field(default_factory=list)


_PREFIX = re.compile(r"^((?:[| ] )*)[|`]-")
_LOC = re.compile(r"(<invalid sloc>|<scratch space>|<built-in>|<command line>)|"
                  r"((?:/|[A-Za-z]:)[^:<>\s,']+):(\d+):(\d+)|line:(\d+):(\d+)|col:(\d+)")


def parse_dump(text: str) -> Node:
    root = Node("Root", "", "")
    stack = [(-1, root)]
    cur_file = ""
    for line in text.splitlines():
        m = _PREFIX.match(line)
        if m:
            depth, body = len(m.group(0)) // 2, line[m.end():]
        elif line and line[0].isalpha():
            depth, body = 0, line
        else:
            continue
        kind, _, rest = body.partition(" ")
        for lm in _LOC.finditer(_strip_quotes(rest)):
            if lm.group(1):
                # clang prints an invalid location without making it the file later `line:`
                # locations are relative to (TextNodeDumper keeps the last valid one)
                if lm.group(1) != "<invalid sloc>":
                    cur_file = lm.group(1)
            elif lm.group(2):
                cur_file = lm.group(2)
        node = Node(kind, rest, cur_file)
        while stack[-1][0] >= depth:
            stack.pop()
        stack[-1][1].children.append(node)
        stack.append((depth, node))
    return root


def _strip_quotes(s: str) -> str:
    return re.sub(r"'[^']*'", "''", s)


def _clean(text: str) -> str:
    """The line without addresses, source ranges and locations (quoted types kept)."""
    out, depth, quoted = [], 0, False
    for ch in text:
        if ch == "'" and depth == 0:
            quoted = not quoted
        if not quoted and ch == "<":
            depth += 1
            continue
        if not quoted and ch == ">" and depth:
            depth -= 1
            continue
        if depth == 0:
            out.append(ch)
    s = "".join(out)
    s = re.sub(r"\b0x[0-9a-f]+\b", "", s)
    parts = re.split(r"('[^']*')", s)
    parts = [p if p.startswith("'") else _LOC.sub("", p) for p in parts]
    return re.sub(r"\s+", " ", "".join(parts)).strip()


def _quoted(text: str) -> list[str]:
    return re.findall(r"'([^']*)'", text)


# ---------------------------------------------------------------------------------------------
# declarations
# ---------------------------------------------------------------------------------------------
@dataclass
class Decl:
    qname: str
    kind: str  # function | record | enum | var | alias | enumerator
    sig: str
    file: str
    members: dict = field(default_factory=dict)  # record: public member name -> [Decl]
    deprecated: bool = False

    def describe(self):
        return f"{self.kind} {self.sig}"


_FLAGS = {"implicit", "used", "referenced", "invalid", "imported", "hidden", "inline", "static",
          "constexpr", "consteval", "extern", "cinit", "callinit", "listinit", "parenlistinit",
          "implicit-inline", "default", "delete", "trivial", "explicit", "virtual", "pure",
          "mutable", "nrvo", "definition", "struct", "class", "union", "typename", "depth",
          "index", "static_inline", "module", "private", "public", "protected", "const", "volatile",
          "non_odr_use_constant", "non_odr_use_unevaluated", "non_odr_use_discarded",
          "instantiated_from", "ignored", "deduction guide"}


class Namer:
    """Template parameters -> positional names, so that `T` and `AddrGen` compare equal."""

    def __init__(self, parent=None):
        self.map = dict(parent.map) if parent else {}

    def add(self, name, depth, index):
        if name:
            self.map[name] = f"$T{depth}.{index}"

    def __call__(self, s: str) -> str:
        for name, pos in self.map.items():
            s = re.sub(rf"(?<![\w:]){re.escape(name)}(?!\w)", pos, s)
        return s


class Extractor:
    def __init__(self, root: Node, keep, typedefs=None):
        self.root = root
        self.keep = keep  # file -> bool: is this a file whose declarations count
        self.typedefs = typedefs if typedefs is not None else {}
        self.out: dict[str, list[Decl]] = {}

    # types ------------------------------------------------------------------------------------
    def canon(self, quoted: list[str]) -> str:
        """A type from a node's quoted types: the desugared one when clang gives it."""
        if not quoted:
            return ""
        t = quoted[1] if len(quoted) > 1 else quoted[0]
        return self.untypedef(t)

    def untypedef(self, t: str) -> str:
        def sub(m):
            name = m.group(0)
            bare = name[5:] if name.startswith("std::") else name
            return self.typedefs.get(bare, name)
        return re.sub(r"(?<![\w:])(?:std::)?[A-Za-z_]\w*(?!\w)", sub, t.strip())

    def collect_typedefs(self, node=None, ns=""):
        if node is None:
            node = self.root.children[0] if self.root.children else self.root
        for ch in node.children:
            if ch.kind == "NamespaceDecl":
                name = _clean(ch.text).split(" ")[-1]
                if name in ("std", "__gnu_cxx") or ns == "":
                    self.collect_typedefs(ch, name)
            elif ch.kind in ("TypedefDecl", "TypeAliasDecl") and ns in ("", "std"):
                q = _quoted(ch.text)
                name = _clean(ch.text.split("'")[0]).split(" ")[-1]
                if q and re.fullmatch(r"u?int\d+_t|uintptr_t|intptr_t|size_t|ptrdiff_t|uint|__u?int\d+_t",
                                      name):
                    self.typedefs[name] = q[-1]

    # expressions (default arguments) ---------------------------------------------------------
    def expr(self, node: Node, namer: Namer) -> str:
        parts = []

        def rec(n):
            if n.kind in ("NestedNameSpecifier",):
                return
            t = _clean(n.text)
            t = re.sub(r"'([^']*)':'([^']*)'", lambda m: f"'{m.group(2)}'", t)
            t = re.sub(r"'([^']*)'", lambda m: "'" + self.untypedef(m.group(1)) + "'", t)
            parts.append(f"{n.kind}[{namer(t)}]")
            for c in n.children:
                rec(c)
        rec(node)
        return " ".join(parts)

    # declarations ----------------------------------------------------------------------------
    def template_params(self, node: Node, namer: Namer) -> str:
        params = []
        for ch in node.children:
            if ch.kind not in ("TemplateTypeParmDecl", "NonTypeTemplateParmDecl", "TemplateTemplateParmDecl"):
                continue
            t = _clean(ch.text)
            m = re.search(r"depth (\d+) index (\d+)(?: (\S+))?", t)
            namer.add(m.group(3) if m else None, m.group(1) if m else "?", m.group(2) if m else "?")
        for ch in node.children:
            if ch.kind == "TemplateTypeParmDecl":
                t = _clean(ch.text)
                p = ("typename..." if "..." in t else "typename")
            elif ch.kind == "NonTypeTemplateParmDecl":
                p = self.canon(_quoted(ch.text)) + (" ..." if "..." in ch.text else "")
            elif ch.kind == "TemplateTemplateParmDecl":
                p = "template-template"
            else:
                continue
            dflt = [c for c in ch.children if c.kind == "TemplateArgument"]
            if dflt:
                d = dflt[0]
                q = _quoted(d.text)
                if _clean(d.text).startswith("type") and q:
                    p += " = type " + namer(self.untypedef(q[-1]))
                else:
                    p += " = " + " ".join(self.expr(c, namer) for c in d.children)
            params.append(namer(p))
        return "template<" + ", ".join(params) + "> "

    def function(self, node: Node, namer: Namer, prefix="") -> str:
        text = _clean(node.text)
        q = _quoted(node.text)
        ftype = self.untypedef(q[-1]) if q else ""
        depth, angle, cut = 0, 0, None
        for i, ch in enumerate(ftype):
            if ch == "<":
                angle += 1
            elif ch == ">":
                angle -= 1
            elif ch == "(":
                if depth == 0 and angle == 0 and cut is None:
                    cut = i
                depth += 1
            elif ch == ")":
                depth -= 1
        ret = ftype[:cut].strip() if cut is not None else ftype
        tail = ftype[ftype.rfind(")") + 1:].strip() if cut is not None else ""
        params = []
        for ch in node.children:
            if ch.kind != "ParmVarDecl":
                continue
            p = self.canon(_quoted(ch.text))
            dflt = [c for c in ch.children if not c.kind.endswith("Attr")]
            if dflt and re.search(r"\b(cinit|callinit|listinit)\b", _clean(ch.text).split("'")[-1]):
                p += " = " + self.expr(dflt[0], namer)
            params.append(namer(p))
        flags = [f for f in ("static", "constexpr", "explicit", "virtual") if re.search(
            rf"(?<![\w-]){f}(?![\w-])", text.split("'")[0] + " " + text.split("'")[-1])]
        sig = f"{prefix}{'/'.join(flags)}{' ' if flags else ''}({', '.join(params)}) -> {namer(ret)}"
        return sig + (f" {namer(tail)}" if tail else "")

    def name_of(self, node: Node) -> str:
        t = _clean(node.text)
        head = t.split("'")[0].split(" ")
        words = [w for w in head if w and w not in _FLAGS and not re.fullmatch(r"\d+", w)]
        return words[-1] if words else ""

    def add(self, qname, decl):
        self.out.setdefault(qname, []).append(decl)

    def walk(self, node: Node, ns: str, namer: Namer, into=None, access_default="public"):
        """Declarations below `node` into `into` (name -> [Decl]); public ones only inside records."""
        into = self.out if into is None else into
        access = access_default
        for ch in node.children:
            if ch.kind == "AccessSpecDecl":
                access = _clean(ch.text).split(" ")[-1]
                continue
            if access != "public" or "implicit" in _clean(ch.text).split("'")[0].split(" "):
                continue
            if into is self.out and not self.keep(ch.file):
                # namespaces span files: look inside; anything else must be in a kept file
                if ch.kind not in ("NamespaceDecl", "LinkageSpecDecl"):
                    continue
            d = self.decl(ch, ns, namer)
            if d is None:
                if ch.kind == "NamespaceDecl":
                    name = self.name_of(ch)
                    if name and name != "ttmock" and not name.startswith("__"):
                        self.walk(ch, f"{ns}{name}::", namer, into)
                elif ch.kind == "LinkageSpecDecl":
                    self.walk(ch, ns, namer, into)
                continue
            for dd in d:
                into.setdefault(dd.qname, []).append(dd)

    def decl(self, ch: Node, ns: str, namer: Namer):
        out = self._decl(ch, ns, namer)
        if out:
            inner = [ch] + [c for c in ch.children if c.kind in ("FunctionDecl", "CXXMethodDecl", "CXXRecordDecl")]
            if any(a.kind == "DeprecatedAttr" for n in inner for a in n.children):
                for d in out:
                    d.deprecated = True
        return out

    def _decl(self, ch: Node, ns: str, namer: Namer):
        k = ch.kind
        name = self.name_of(ch)
        if k in ("FunctionDecl", "CXXMethodDecl", "CXXConstructorDecl"):
            return [Decl(ns + name, "function", ns + name + " " + self.function(ch, namer), ch.file)]
        if k == "FunctionTemplateDecl":
            sub = Namer(namer)
            tp = self.template_params(ch, sub)
            fn = [c for c in ch.children if c.kind in ("FunctionDecl", "CXXMethodDecl", "CXXConstructorDecl")]
            if not fn:
                return []  # deduction guides: how the mock's class templates deduce is its own
            return [Decl(ns + name, "function", ns + name + " " + self.function(fn[0], sub, tp), ch.file)]
        if k in ("CXXRecordDecl", "ClassTemplateDecl"):
            sub = Namer(namer)
            tp = ""
            rec = ch
            if k == "ClassTemplateDecl":
                tp = self.template_params(ch, sub)
                recs = [c for c in ch.children if c.kind == "CXXRecordDecl"]
                if not recs:
                    return []
                rec = recs[0]
            rt = _clean(rec.text)
            if "definition" not in rt.split(" "):
                return [Decl(ns + name, "record", f"{tp}{ns}{name} (declared)", ch.file)]
            members: dict[str, list[Decl]] = {}
            self.walk(rec, f"{ns}{name}::", sub, members,
                      access_default="private" if " class " in f" {rt} " else "public")
            return [Decl(ns + name, "record", f"{tp}{ns}{name}", ch.file, members)]
        if k == "EnumDecl":
            t = _clean(ch.text)
            scoped = " class " in f" {t.split(chr(39))[0]} " or " struct " in f" {t.split(chr(39))[0]} "
            under = self.canon(_quoted(ch.text))
            out = []
            vals = []
            scope = f"{ns}{name}::"
            for c in ch.children:
                if c.kind != "EnumConstantDecl":
                    continue
                cname = self.name_of(c)
                v = " ".join(self.expr(x, namer) for x in c.children if x.kind != "value:")
                vals.append(f"{cname}{'=' + v if v else ''}")
                sig = f"{scope}{cname} {v}"
                out.append(Decl(scope + cname, "enumerator", sig, c.file))
                if not scoped:
                    out.append(Decl(ns + cname, "enumerator", sig, c.file))
            return [Decl(ns + name, "enum", f"enum{' class' if scoped else ''} {ns}{name} : {under} "
                                             f"{{{', '.join(vals)}}}", ch.file)] + out
        if k in ("VarDecl", "FieldDecl"):
            t = _clean(ch.text)
            flags = [f for f in ("static", "constexpr", "extern") if f" {f} " in f" {t} "]
            return [Decl(ns + name, "var", f"{' '.join(flags)} {ns}{name} : "
                                            f"{namer(self.canon(_quoted(ch.text)))}".strip(), ch.file)]
        if k in ("TypedefDecl", "TypeAliasDecl"):
            return [Decl(ns + name, "alias", f"{ns}{name} = {namer(self.canon(_quoted(ch.text)))}", ch.file)]
        if k == "TypeAliasTemplateDecl":
            sub = Namer(namer)
            tp = self.template_params(ch, sub)
            al = [c for c in ch.children if c.kind == "TypeAliasDecl"]
            t = sub(self.canon(_quoted(al[0].text))) if al else ""
            return [Decl(ns + name, "alias", f"{tp}{ns}{name} = {t}", ch.file)]
        return None


def extract(dump: str, keep) -> tuple[dict[str, list[Decl]], dict[str, str]]:
    root = parse_dump(dump)
    ex = Extractor(root, keep)
    ex.collect_typedefs()
    ex.walk(root.children[0] if root.children else root, "", Namer())
    return ex.out, ex.typedefs


# ---------------------------------------------------------------------------------------------
# translation units
# ---------------------------------------------------------------------------------------------
def public_headers(include: Path = MOCK_INCLUDE) -> dict[str, list[str]]:
    """The mock's device API headers by kernel kind (paths relative to the include dir)."""
    out = {"compute": [], "dataflow": []}
    for p in sorted((include / "api").rglob("*.h")):
        rel = p.relative_to(include).as_posix()
        out["compute" if rel.startswith("api/compute/") else "dataflow"].append(rel)
    return out


class Twin:
    """Builds and runs the clang commands of both sides."""

    def __init__(self, sc, work: Path, include: Path = MOCK_INCLUDE, arch="wormhole_b0", sdk_work=None):
        self.sc, self.work, self.include = sc, work, include
        self.sdk_work = sdk_work or work
        self.a = sc.ARCHES[arch]
        plan = {"target": arch, "kernels": {"compute": {"config": {}}},
                "circular_buffers": [{"id": i, "data_format": "Float16_b"} for i in range(32)]}
        self.gen = self.sdk_work / "gen"
        self.gen.mkdir(parents=True, exist_ok=True)
        (self.gen / "chlkc_descriptors.h").write_text(sc.descriptors_h(plan))
        (self.gen / "defines_generated.h").write_text("#define NOC_MODE 0\n")
        self.fw = sc.SDK / "tt_metal/hw/firmware/src/tt-1xx"

    def base(self):
        return self.sc.device_base_flags(self.a) + ["-w", "-fno-color-diagnostics"]

    # SDK side: the firmware wrapper with `headers` as the kernel
    def sdk_cmd(self, kind, pass_, headers, tag):
        d = self.sdk_work / f"sdk-{kind}-{pass_}-{tag}"
        d.mkdir(parents=True, exist_ok=True)
        body = "".join(f'#include "{h}"\n' for h in headers)
        cmd = self.base() + ["-I", str(d), "-I", str(self.gen)]
        if kind == "compute":
            i = dict(COMPUTE_PASSES)[pass_]
            for t, _ in COMPUTE_PASSES:
                (d / f"chlkc_{t.lower()}.cpp").write_text(
                    f'#define TRISC_{t}\n#include "defines_generated.h"\n{body}\nvoid kernel_main() {{}}\n')
            for p in self.sc.device_includes(self.a, compute=True):
                cmd += ["-I", str(p)]
            cmd += self.sc.device_defines(self.a, 2 + i) + [f"-DUCK_CHLKC_{pass_}", f"-DCOMPILE_FOR_TRISC={i}"]
            return cmd, self.fw / "trisck.cc"
        wrapper, define, pidx, _ = self.sc.DM_PROCESSORS[pass_]
        (d / "kernel_includes.hpp").write_text(body + "\nvoid kernel_main() {}\n")
        for p in self.sc.device_includes(self.a, compute=False):
            cmd += ["-I", str(p)]
        cmd += self.sc.device_defines(self.a, pidx) + [f"-D{define}", f"-DNOC_INDEX={pidx}", "-DNOC_MODE=0"]
        return cmd, self.fw / wrapper

    def mock_cmd(self, kind, headers, tag, pass_=None):
        """The mock side; `pass_` names the SDK pass it stands for: a compute kernel's UNPACK / PACK
        pass defines TRISC_UNPACK / TRISC_PACK as the SDK's does (the emulator's own single compile
        is the MATH pass, where the mock's prelude defines TRISC_MATH), a data movement kernel is
        built for BRISC (RISCV_0) or NCRISC (RISCV_1), as the emulator's kernel JIT builds it."""
        d = self.work / f"mock-{kind}-{tag}-{pass_ or 'default'}"
        d.mkdir(parents=True, exist_ok=True)
        src = d / "kernel.cpp"
        src.write_text("".join(f'#include "{h}"\n' for h in headers) + "\nvoid kernel_main() {}\n")
        cmd = self.base() + ["-I", str(self.include), "-include", MOCK_PRELUDE[kind],
                             "-DTTMOCK_DST_ACCUM_MODE=false"]
        cmd += {None: [], "MATH": [], "UNPACK": ["-DTRISC_UNPACK"], "PACK": ["-DTRISC_PACK"],
                "RISCV_0": ["-DCOMPILE_FOR_BRISC"], "RISCV_1": ["-DCOMPILE_FOR_NCRISC"]}[pass_]
        return cmd, src

    @staticmethod
    def run(cmd, src, mode):
        extra = {"ast": ["-fsyntax-only", "-Xclang", "-ast-dump", "-Xclang", "-skip-function-bodies"],
                 "deps": ["-E", "-M"], "macros": ["-E", "-dM"]}[mode]
        p = subprocess.run(cmd + extra + [str(src)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"clang failed on {src}:\n" + p.stderr[-4000:])
        return p.stdout


def _deps(text: str) -> set[str]:
    files = text.replace("\\\n", " ").split(":", 1)[-1].split()
    return {os.path.realpath(f) for f in files}


def _macros(text: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^#define (\w+)", text, re.M)}


@dataclass
class Finding:
    header: str
    where: str  # "mock" side description
    message: str

    def __str__(self):
        return f"{self.header}: {self.message}"


_SDK_CACHE: dict = {}  # SDK-side clang outputs, by (kind, pass, headers, mode): they never change
_SDK_WORK: Path | None = None  # where the SDK side's files live (the cached outputs name them)


def _sdk_work() -> Path:
    global _SDK_WORK
    if _SDK_WORK is None:
        import atexit
        _SDK_WORK = Path(tempfile.mkdtemp(prefix="sdk-twin-sdk-"))
        atexit.register(shutil.rmtree, _SDK_WORK, True)
    return _SDK_WORK


def compare(include: Path = MOCK_INCLUDE, work: Path | None = None, jobs: int = 2,
            only: list[str] | None = None, all_passes: bool = True) -> list[Finding]:
    """Every difference between the mock device headers under `include` and the SDK's (`only`:
    just these public headers; `all_passes=False`: only the MATH / RISCV_0 compile)."""
    sc = load_sdkcheck()
    tmp = Path(tempfile.mkdtemp(prefix="sdk-twin-")) if work is None else work
    try:
        return _compare(sc, include, tmp, jobs, only, all_passes)
    finally:
        if work is None:
            shutil.rmtree(tmp, ignore_errors=True)


def _compare(sc, include, work, jobs, only, all_passes):
    tw = Twin(sc, work, include, sdk_work=_sdk_work())
    sdk_inc = sc.SDK / "tt_metal/hw/inc"
    findings: list[Finding] = []
    headers = public_headers(include)
    if only is not None:
        headers = {k: [h for h in hs if h in only] for k, hs in headers.items()}
    mock_root = os.path.realpath(include)
    in_mock = lambda f: os.path.realpath(f).startswith(mock_root + os.sep)  # noqa: E731
    # every pass is checked for the signatures; visibility through each header in the first
    passes = {"compute": ["MATH", "UNPACK", "PACK"], "dataflow": ["RISCV_0", "RISCV_1"]}
    if not all_passes:
        passes = {k: v[:1] for k, v in passes.items()}
    jobs_list = []  # (key, cmd, src, mode)
    for kind, hs in headers.items():
        present = []
        for h in hs:
            if not (sdk_inc / h).exists():
                findings.append(Finding(h, "path", f"the SDK has no header {h}"))
            else:
                present.append(h)
        headers[kind] = present
        if not present:
            continue
        for ps in passes[kind]:
            cmd, src = tw.mock_cmd(kind, present, "all", ps)
            jobs_list += [((kind, "mock", "ast", ps), cmd, src, "ast"),
                          ((kind, "mock", "macros", ps), cmd, src, "macros")]
        first = passes[kind][0]
        cmd, src = tw.mock_cmd(kind, [], "none", first)
        jobs_list.append(((kind, "mock", "base-deps"), cmd, src, "deps"))
        for h in present:
            cmd, src = tw.mock_cmd(kind, [h], re.sub(r"\W", "_", h), first)
            jobs_list.append(((kind, "mock", "deps", h), cmd, src, "deps"))
        for i, ps in enumerate(passes[kind]):
            cmd, src = tw.sdk_cmd(kind, ps, present, "all")
            jobs_list += [((kind, ps, "ast", tuple(present)), cmd, src, "ast"),
                          ((kind, ps, "macros", tuple(present)), cmd, src, "macros")]
            if i == 0:
                for h in present:
                    cmd, src = tw.sdk_cmd(kind, ps, [h], re.sub(r"\W", "_", h))
                    jobs_list.append(((kind, ps, "deps", h), cmd, src, "deps"))
    todo = [j for j in jobs_list if j[0][1] == "mock" or j[0] not in _SDK_CACHE]
    with ThreadPoolExecutor(max(1, jobs)) as ex:
        outs = dict(zip([j[0] for j in todo], ex.map(lambda j: Twin.run(j[1], j[2], j[3]), todo)))
    for key, out in outs.items():
        if key[1] != "mock":
            _SDK_CACHE[key] = out
    outs.update({j[0]: _SDK_CACHE[j[0]] for j in jobs_list if j[0][1] != "mock"})
    for kind, hs in headers.items():
        if not hs:
            continue
        base = _deps(outs[(kind, "mock", "base-deps")])
        mock_files = set(base)
        for h in hs:
            mock_files |= _deps(outs[(kind, "mock", "deps", h)])
        defined_in_mock = set()
        for f in mock_files:
            if f.startswith(mock_root + os.sep):
                defined_in_mock |= {m.group(1) for m in re.finditer(r"^\s*#\s*define\s+(\w+)",
                                                                    Path(f).read_text(), re.M)}
        for i, ps in enumerate(passes[kind]):
            mock_decls, _ = extract(outs[(kind, "mock", "ast", ps)], in_mock)
            # namespace sfpi: sdkcheck compiles the SDK against its SFPI stand-in (empty classes
            # that accept any use), so there is no SDK declaration to hold the mock's SFPI to; its
            # behaviour is what testing/runtime/test_sfpi.py checks
            mock_decls = {q: ds for q, ds in mock_decls.items() if not q.startswith("sfpi::")}
            mock_macros = {m for m in _macros(outs[(kind, "mock", "macros", ps)]) & defined_in_mock
                           if not m.startswith("TTMOCK_")}
            sdk_decls, _ = extract(outs[(kind, ps, "ast", tuple(hs))], lambda f: True)
            sdk_macros = _macros(outs[(kind, ps, "macros", tuple(hs))])
            for mname in sorted(mock_macros - sdk_macros):
                findings.append(Finding(kind, ps, f"macro {mname} is not defined by the SDK ({ps})"))
            for h in hs:
                vis_mock = _deps(outs[(kind, "mock", "deps", h)]) | base
                # visibility through `h` is checked in the first pass; the others need the same
                # declaration anywhere in the translation unit of all headers
                vis_sdk = _deps(outs[(kind, ps, "deps", h)]) if i == 0 else None
                for qname, ds in sorted(mock_decls.items()):
                    for d in ds:
                        if os.path.realpath(d.file) not in vis_mock:
                            # the other way round: what the SDK's header offers, the mock's must too
                            if vis_sdk is not None and any(
                                    os.path.realpath(c.file) in vis_sdk and c.kind == d.kind and c.sig == d.sig
                                    for c in sdk_decls.get(qname, [])):
                                findings.append(Finding(h, ps, f"{d.describe()}: the SDK declares it through "
                                                               f"{h}, the mock does not [{ps}]"))
                            continue
                        cands = [s for s in sdk_decls.get(qname, [])
                                 if vis_sdk is None or os.path.realpath(s.file) in vis_sdk]
                        findings += [Finding(h, ps, m) for m in _match(d, cands, qname, h, ps)]
    # the same difference seen through several headers / passes is reported once
    seen, out = set(), []
    for f in findings:
        key = f.message.split(" [")[0].split(": the SDK declares no")[0]
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _match(d: Decl, cands: list[Decl], qname: str, header: str, ps: str) -> list[str]:
    if not cands:
        return [f"{d.describe()}: the SDK declares no {qname} visible through {header} [{ps}]"]
    same = [c for c in cands if c.kind == d.kind and c.sig == d.sig]
    if not same:
        alts = " | ".join(sorted({c.describe() for c in cands}))
        return [f"{d.describe()}: differs from the SDK's {alts} [{ps}]"]
    # a name the SDK deprecates (a newer SDK removes it) the mock offers only as deprecated too:
    # TT-Metalium programs that use it build with the SDK's warning, generated code never uses it
    # (mock host builds and sdkcheck make deprecations errors)
    if all(c.deprecated for c in same) and not d.deprecated:
        return [f"{d.describe()}: deprecated in the SDK (a newer SDK removes it), not in the mock [{ps}]"]
    if d.deprecated and not any(c.deprecated for c in same):
        return [f"{d.describe()}: deprecated in the mock, not in the SDK [{ps}]"]
    if d.kind != "record":
        return []
    problems = []
    for c in same:
        problems = []
        for mname, mds in sorted(d.members.items()):
            for md in mds:
                problems += _match(md, c.members.get(mname, []), mname, header, ps)
        if not problems:
            return []
    return problems


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--include", type=Path, default=MOCK_INCLUDE, help="mock include dir")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="keep the clang work files here")
    args = ap.parse_args(argv)
    try:
        findings = compare(args.include, args.keep, args.jobs)
    except Unavailable as e:
        print(f"sdk_twin: sdkcheck environment missing: {e}", file=sys.stderr)
        return 2
    for f in findings:
        print(f)
    print(f"sdk_twin: {len(findings)} difference(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
