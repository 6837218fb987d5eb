"""Initial file systems for the authored suites, written compactly.

A directory is a dict, a file is its content string. ``bfcl(root_name, spec)`` turns one into the
BFCL ``{"root": {NAME: {"type": "directory", "contents": ...}}}`` shape the suites use. All names and
contents are invented for this project.
"""

from __future__ import annotations

from typing import Any

Spec = dict[str, Any]


def _node(value: str | Spec) -> dict[str, Any]:
    if isinstance(value, str):
        return {"type": "file", "content": value}
    return {"type": "directory", "contents": {k: _node(v) for k, v in value.items()}}


def bfcl(root_name: str, spec: Spec) -> dict[str, Any]:
    return {"root": {root_name: _node(spec)}}


def lines(*items: str) -> str:
    return "\n".join(items) + "\n"


RUN_LOG = lines(
    "2024-03-01 08:00:01 INFO start tide service",
    "2024-03-01 08:00:02 INFO loading station list",
    "2024-03-01 08:00:05 INFO fetched 41 stations",
    "2024-03-01 08:01:10 WARN slow response from Gdansk",
    "2024-03-01 08:01:12 INFO cache hit ratio 0.83",
    "2024-03-01 08:02:44 ERROR timeout talking to Hel",
    "2024-03-01 08:02:45 INFO retrying Hel",
    "2024-03-01 08:02:49 INFO Hel ok",
    "2024-03-01 08:05:00 INFO table written",
    "2024-03-01 08:10:31 ERROR disk quota at 91%",
    "2024-03-01 08:10:32 WARN skipping archive step",
    "2024-03-01 08:15:00 INFO heartbeat",
    "2024-03-01 08:20:00 INFO heartbeat",
    "2024-03-01 08:25:00 INFO heartbeat",
    "2024-03-01 08:30:02 INFO shutdown requested",
)

MIRA: Spec = {
    "notes.txt": lines("renew passport", "call the plumber", "buy oat milk", "book dentist"),
    "todo.md": lines("- fix bike brakes", "- water the ferns", "- email Dana about Saturday"),
    ".bashrc": lines("export EDITOR=nano", "alias ll='ls -la'"),
    "drafts": {
        "essay_v1.txt": lines("Rivers shape the valleys they cross.", "Slow water carves deep bends."),
        "essay_v2.txt": lines("Rivers shape the valleys they cross.", "Fast water cuts straight channels."),
    },
    "photos": {"beach.jpg": "JPEG:beach-2023", ".thumbs": "thumbnail cache"},
}

TOMASZ: Spec = {
    "project": {
        "README.md": lines("# Tide", "A tiny tide-table calculator.", "Run: python tide.py --port Gdansk"),
        "tide.py": lines("import sys", "", "def main():", "    print('high water at 06:12')", "",
                         "if __name__ == '__main__':", "    main()"),
        "requirements.txt": lines("requests", "numpy", "pytest"),
        "logs": {"run.log": RUN_LOG},
    },
    "archive": {},
}

PRIYA: Spec = {
    "budget": {
        "2023.csv": lines("month,spent", "jan,1200", "feb,980", "mar,1430"),
        "2024.csv": lines("month,spent", "jan,1100", "feb,980", "mar,1390"),
        "summary.txt": lines("Spending fell in January.", "February was flat.", "March dropped by 40."),
    },
    "receipts": {
        "grocery_05.txt": lines("bread 2.10", "apples 3.40", "coffee 7.99"),
        "hardware_12.txt": lines("screws 4.50", "wood glue 6.25"),
    },
    "inbox": {},
}

JUN: Spec = {
    "日記.txt": lines("今日は雨。", "駅まで歩いた。", "夜は静か。"),
    "café menu.txt": lines("espresso 2.50", "cortado 3.00", "chai latte 3.80", "flat white 3.20"),
    "recipes": {
        "crème brûlée.md": lines("# Crème brûlée", "- 4 yolks", "- 500 ml cream", "- vanilla"),
        "phở.md": lines("# Phở", "- beef bones", "- star anise", "- rice noodles"),
    },
}

OSKAR: Spec = {
    "papers": {
        "draft.tex": lines("\\section{Method}", "We sample 40 plots.", "\\section{Results}", "TODO"),
        "refs.bib": lines("@article{lind2019,", "  title={Moss cover on north slopes},", "}"),
    },
    "data": {
        "trial_a.csv": lines("plot,cover", "1,0.42", "2,0.37", "3,0.51"),
        "trial_b.csv": lines("plot,cover", "1,0.40", "2,0.37", "3,0.55"),
        "readme.txt": lines("Cover is the fraction of the plot with moss.", "Trials A and B share plots."),
    },
    "scratch": {},
}

LEILA: Spec = {
    "site": {
        "index.html": lines("<!doctype html>", "<title>Leila's kiln</title>", "<h1>Stoneware, fired slow</h1>"),
        "style.css": lines("body { font-family: serif; }", "h1 { color: #7a3b2e; }"),
        "app.js": lines("const glaze = 'celadon';", "console.log(`today: ${glaze}`);"),
        "assets": {"logo.svg": "<svg><circle r='4'/></svg>"},
    },
    "backups": {},
    "notes.md": lines("kiln schedule: cone 6", "order more clay"),
}

KOFI: Spec = {
    "playlists": {
        "road trip.txt": lines("Highlife Medley", "Sweet Mother", "Yaa Amponsah", "Kaa Nyinaa"),
        "focus.txt": lines("Rain on tin", "Low cello", "Night bus"),
    },
    "lyrics": {"untitled 3.txt": lines("the harmattan wind", "sings dust into my shoes")},
    "setlist.txt": lines("1. Opener", "2. Slow one", "3. Crowd song"),
}

INES: Spec = {
    "semester1": {
        "math_notes.txt": lines("limits", "derivatives", "chain rule", "integrals by parts"),
        "bio_notes.txt": lines("cell membrane", "mitosis", "osmosis"),
    },
    "semester2": {},
    "grades.txt": lines("math: 17", "biology: 15", "history: 18"),
    ".secret_plan": "learn the cello by June",
}

SRV: Spec = {
    "logs": {
        "access.log": lines(*(f"10.0.0.{i} GET /{p} 200" for i, p in enumerate(
            ["", "shop", "shop/cart", "about", "shop", "api/stock", "login", "shop", "", "api/stock", "logout", "admin"],
            start=1))),
        "error.log": lines("[warn] upstream slow", "[error] db connection refused", "[error] db connection refused",
                           "[warn] cert expires in 9 days", "[error] worker 3 crashed"),
    },
    "config": {
        "nginx.conf": lines("worker_processes 2;", "events { worker_connections 512; }"),
        "app.env": lines("PORT=8080", "DEBUG=false", "DB_HOST=db.internal"),
    },
    "tmp": {"old_cache.bin": "0000", "sessions": {}},
}

SAM: Spec = {
    "chapters": {
        "ch01.txt": lines("The ferry left at dawn.", "Nobody waved."),
        "ch02.txt": lines("By noon the island was a rumour.", "Marta counted the gulls."),
        "ch03.txt": lines("The storm arrived without a name."),
    },
    "outline.txt": lines("1 departure", "2 open water", "3 storm", "4 landfall"),
    "to review": {},
}

NADIA: Spec = {
    "garden": {
        "seeds.txt": lines("tomato 'Black Krim'", "basil", "runner beans", "calendula"),
        "journal.txt": lines("Apr 2: sowed tomatoes indoors", "Apr 9: first basil leaves",
                             "Apr 20: slugs on the lettuce", "May 1: beans planted out"),
    },
    "recipes": {"pesto.txt": lines("basil", "pine nuts", "parmesan", "olive oil")},
}

BEN: Spec = {
    "invoices": {
        "inv_001.txt": lines("client: Harbor Cafe", "amount: 420", "status: paid"),
        "inv_002.txt": lines("client: North Print", "amount: 1150", "status: open"),
        "inv_003.txt": lines("client: Harbor Cafe", "amount: 380", "status: open"),
    },
    "clients.txt": lines("Harbor Cafe", "North Print", "Lumen Studio"),
    "old": {"inv_000.txt": lines("client: test", "amount: 0")},
}

YUKI: Spec = {
    "game": {
        "save1.dat": "level=4;hp=31",
        "save2.dat": "level=7;hp=12",
        "config.ini": lines("[video]", "fullscreen=true", "[audio]", "volume=70"),
        "mods": {},
    },
    "screenshots": {"boss.png": "PNG:boss", "map.png": "PNG:map"},
}


ALL: dict[str, tuple[str, Spec]] = {
    "mira": ("mira", MIRA), "tomasz": ("tomasz", TOMASZ), "priya": ("priya", PRIYA), "jun": ("jun", JUN),
    "oskar": ("oskar", OSKAR), "leila": ("leila", LEILA), "kofi": ("kofi", KOFI), "ines": ("ines", INES),
    "srv": ("srv", SRV), "sam": ("sam", SAM), "nadia": ("nadia", NADIA), "ben": ("ben", BEN),
    "yuki": ("yuki", YUKI),
}


def tree(key: str) -> dict[str, Any]:
    root, spec = ALL[key]
    return bfcl(root, spec)
