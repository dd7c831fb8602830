"""`perfsnake history ...`: record, export, show and publish the results store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from perfsnake.history.sources import SourceError
from perfsnake.history.store import Store, StoreError, default_url


def add_parser(sub: argparse._SubParsersAction) -> None:
    hist = sub.add_parser("history", help="the results store: every invocation's runs, over time and commits")
    hist.add_argument("--store", metavar="URL", help=f"sqlite:///PATH or postgresql://... (default: $PERFSNAKE_HISTORY or {default_url()})")  # fmt: skip
    verbs = hist.add_subparsers(dest="verb", required=True, metavar="VERB", help="import, export, show or publish")
    imp = verbs.add_parser("import", help="record existing result directories or artifact zips (what is stored already is skipped)")  # fmt: skip
    imp.add_argument("paths", nargs="+", type=Path, metavar="DIR_OR_ZIP")
    exp = verbs.add_parser("export", help="every stored run as one CSV or Parquet file")
    exp.add_argument("output", type=Path, metavar="FILE.csv|FILE.parquet")
    exp.add_argument("--campaign")
    show = verbs.add_parser("show", help="per record: the latest invocation beside the recent past, and steps")
    show.add_argument("campaign")
    show.add_argument("--metric")
    show.add_argument("--machine", metavar="HOST")
    show.add_argument("--since", metavar="ISO-DATE", help="only runs that started at or after this time")
    show.add_argument("--last", type=int, default=10, help="how many invocations make the recent past (default 10)")
    show.add_argument("--figure", type=Path, metavar="DIR", help="also write the metric over time (and versions) there")
    pub = verbs.add_parser("publish", help="a static dashboard of every campaign and machine (open DIR/index.html)")
    pub.add_argument("output", type=Path, metavar="DIR")


def main(args: argparse.Namespace) -> int:
    try:
        store = Store.open(args.store, create=args.verb == "import")
        if args.verb == "import":
            from perfsnake.history import import_path

            for path in args.paths:
                for line in import_path(path, store.url):
                    print(line)
            return 0
        if args.verb == "export":
            return _export(store, args.output, args.campaign)
        if args.verb == "show":
            return _show(store, args)
        if args.verb == "publish":
            from perfsnake.history.dashboard import publish

            pages = publish(store, args.output)
            print(f"history: {len(pages)} page(s) in {args.output}: open {args.output / 'index.html'}")
            return 0
    except (StoreError, SourceError) as exc:
        print(f"perfsnake: history: {exc}", file=sys.stderr)
        return 2
    return 2


def _export(store: Store, output: Path, campaign: str | None) -> int:
    import json

    import pandas as pd

    frame = store.frame(campaign)
    metrics = pd.DataFrame([json.loads(m) for m in frame["metrics"]]) if not frame.empty else pd.DataFrame()
    records = pd.DataFrame([json.loads(r) for r in frame["record"]]) if not frame.empty else pd.DataFrame()
    flat = pd.concat([frame.drop(columns=["metrics", "machine"], errors="ignore"), records.add_prefix("var."), metrics.add_prefix("metric.")], axis=1)  # fmt: skip
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.suffix == ".parquet":
        flat.to_parquet(output, index=False)
    elif output.suffix == ".csv":
        flat.to_csv(output, index=False)
    else:
        print(f"perfsnake: history: export: {output}: name a .csv or .parquet file", file=sys.stderr)
        return 2
    print(f"history: {len(flat)} run(s) written to {output}")
    return 0


def _show(store: Store, args: argparse.Namespace) -> int:
    from perfsnake.history import views

    frame = store.frame(args.campaign, args.machine, args.since)
    if frame.empty:
        print(f"perfsnake: history: no runs of {args.campaign} in {store.url}", file=sys.stderr)
        return 1
    print(views.show(frame, args.campaign, args.metric, args.last), end="")
    if args.figure:
        metric = args.metric or views.metrics_of(frame)[0]
        args.figure.mkdir(parents=True, exist_ok=True)
        written = []
        for by in ("when", "version"):
            if by == "version" and not frame["versions"].map(lambda v: v not in (None, "", "{}")).any():
                continue
            chart = views.figure(frame, metric, by)
            for ext in ("svg", "png", "html"):
                path = args.figure / f"{args.campaign}-{metric}-{'time' if by == 'when' else 'versions'}.{ext}"
                chart.save(str(path))
                written.append(path)
        print("figures: " + " ".join(map(str, written)))
    return 0
