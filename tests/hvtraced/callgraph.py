#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# hvtraced/callgraph: the daemon's files call each other in one direction.
#
# Derives the file-level call graph of hvtraced from its built objects:
# file A depends on file B when an undefined symbol of A.o (a function it
# calls, a table or variable it uses) is defined by B.o, as `nm` reports
# them.  Fails on any cycle, printing it; otherwise prints the graph in
# layer order (each file calls only files printed before it).
#
# With DOC (docs/proxy.md), also checks the layer map of its "Inside
# hvtraced" section (a code block naming one file a line, callers above
# callees): every file is on it and no call goes up.
#
#   callgraph.py OBJDIR SRCDIR [DOC]

import os
import subprocess
import sys


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def nm(obj, *flags):
    out = subprocess.run(["nm", *flags, obj], check=True,
                         capture_output=True, text=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            syms.add(parts[-1])
    return syms


def find_cycle(graph):
    """One cycle as a list of nodes (first == last), or None."""
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def layers(graph):
    """Files in an order where each calls only earlier ones."""
    done, order = set(), []
    while len(order) < len(graph):
        ready = sorted(n for n in graph if n not in done and
                       graph[n] <= done)
        order.extend(ready)
        done.update(ready)
    return order


def doc_layers(doc):
    """Files of the map in DOC's "Inside hvtraced", top to bottom."""
    order, in_section, in_block = [], False, False
    with open(doc) as f:
        for line in f:
            if line.startswith("#"):
                in_section = line.strip() == "### Inside hvtraced"
                continue
            if not in_section:
                continue
            if line.startswith("```"):
                if in_block:
                    break
                in_block = True
                continue
            words = line.split()
            if in_block and words and words[0].endswith(".c"):
                order.append(words[0][:-2])
    return order


def check_doc(graph, why, doc):
    order = doc_layers(doc)
    if not order:
        sys.exit("FAIL: %s has no layer map under '### Inside hvtraced'"
                 % doc)
    bad = 0
    for f in sorted(set(graph) - set(order)):
        print("FAIL: %s does not place %s.c in its layer map" % (doc, f))
        bad += 1
    for f in sorted(set(order) - set(graph)):
        print("FAIL: %s names %s.c, which is not a source of hvtraced" %
              (doc, f))
        bad += 1
    rank = {f: i for i, f in enumerate(order)}
    for f in sorted(graph):
        for g in sorted(graph[f]):
            if f in rank and g in rank and rank[g] <= rank[f]:
                print("FAIL: %s.c calls %s.c (%s), which %s puts above it"
                      % (f, g, why[(f, g)], doc))
                bad += 1
    if bad:
        sys.exit(1)
    print("%s: the layer map matches (%d files, no call goes up)" %
          (doc, len(order)))


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: callgraph.py OBJDIR SRCDIR [DOC]")
    objdir, srcdir = sys.argv[1:3]
    try:
        subprocess.run(["nm", "--version"], check=True,
                       capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        skip("no nm (binutils) to read the objects with")
    files = sorted(f[:-2] for f in os.listdir(srcdir) if f.endswith(".c"))
    if not files:
        sys.exit("FAIL: no hvtraced sources in " + srcdir)
    defs, undefs = {}, {}
    for f in files:
        obj = os.path.join(objdir, f + ".o")
        if not os.path.exists(obj):
            skip(obj + " is not built (run make first)")
        defs[f] = nm(obj, "--defined-only", "--extern-only")
        undefs[f] = nm(obj, "--undefined-only")
    owner = {}
    for f in files:
        for s in defs[f]:
            if s in owner:
                sys.exit("FAIL: %s is defined in both %s.c and %s.c" %
                         (s, owner[s], f))
            owner[s] = f
    graph = {f: set() for f in files}
    why = {}
    for f in files:
        for s in sorted(undefs[f]):
            g = owner.get(s)
            if g and g != f:
                graph[f].add(g)
                why.setdefault((f, g), s)
    nr_edges = sum(len(v) for v in graph.values())
    # main.c alone calls half the daemon: no edges means nm read nothing.
    if nr_edges < len(files) - 1:
        sys.exit("FAIL: only %d calls between %d files: nm did not read "
                 "the objects" % (nr_edges, len(files)))
    cycle = find_cycle(graph)
    if cycle:
        print("FAIL: hvtraced files call each other in a circle:")
        for a, b in zip(cycle, cycle[1:]):
            print("  %s.c -> %s.c (%s)" % (a, b, why[(a, b)]))
        sys.exit(1)
    print("hvtraced call graph, %d files, %d file-level calls, no cycle; "
          "each calls only files above it:" % (len(files), nr_edges))
    for f in layers(graph):
        calls = " ".join(sorted(g + ".c" for g in graph[f]))
        print("  %-16s -> %s" % (f + ".c", calls or "(libraries only)"))
    if len(sys.argv) == 4:
        check_doc(graph, why, sys.argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main())
