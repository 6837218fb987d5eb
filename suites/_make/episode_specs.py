"""Episodes of the authored ``suites/fs-episodes`` suite, written for this project.

Each episode: (id, tree key, turns); a turn is (user text, [ground-truth calls]) in Python call
syntax with keyword arguments. Each episode starts in the root directory of its tree.
"""

from __future__ import annotations

Turn = tuple[str, list[str]]

EPISODES: list[tuple[str, str, list[Turn]]] = [
    ("ep-tomasz-build", "tomasz", [
        ("Go into the project folder and make a directory called build.",
         ["cd(folder='project')", "mkdir(dir_name='build')"]),
        ("Copy tide.py into build, then go into build and list it.",
         ["cp(source='tide.py', destination='build')", "cd(folder='build')", "ls()"]),
        ("Show me the last 2 lines of the file you copied.", ["tail(file_name='tide.py', lines=2)"]),
    ]),
    ("ep-mira-shopping", "mira", [
        ("Create shopping.txt in my home folder and write 'pears and rice' into it.",
         ["touch(file_name='shopping.txt')", "echo(content='pears and rice', file_name='shopping.txt')"]),
        ("Now move it into drafts.", ["mv(source='shopping.txt', destination='drafts')"]),
        ("Go to drafts and tell me how many words shopping.txt has.",
         ["cd(folder='drafts')", "wc(file_name='shopping.txt', mode='w')"]),
    ]),
    ("ep-priya-summary", "priya", [
        ("In budget, compare the two yearly csv files.",
         ["cd(folder='budget')", "diff(file_name1='2023.csv', file_name2='2024.csv')"]),
        ("Keep a copy of summary.txt as summary_old.txt.",
         ["cp(source='summary.txt', destination='summary_old.txt')"]),
        ("Replace summary.txt with the text 'Spending is down overall.'",
         ["echo(content='Spending is down overall.', file_name='summary.txt')"]),
        ("And show me what it says now.", ["cat(file_name='summary.txt')"]),
    ]),
    ("ep-jun-pho", "jun", [
        ("Go to recipes and find the file whose name contains phở.",
         ["cd(folder='recipes')", "find(path='.', name='phở')"]),
        ("Rename it to pho.md so it is easier to type.", ["mv(source='phở.md', destination='pho.md')"]),
        ("Search it for anise.", ["grep(file_name='pho.md', pattern='anise')"]),
    ]),
    ("ep-oskar-trials", "oskar", [
        ("Go into data and sort trial_a.csv.", ["cd(folder='data')", "sort(file_name='trial_a.csv')"]),
        ("Make a copy of trial_b.csv called trial_b_clean.csv and count its lines.",
         ["cp(source='trial_b.csv', destination='trial_b_clean.csv')", "wc(file_name='trial_b_clean.csv', mode='l')"]),
        ("Go back up and list the top level.", ["cd(folder='..')", "ls()"]),
    ]),
    ("ep-leila-backup", "leila", [
        ("Copy the whole site folder into backups.", ["cp(source='site', destination='backups')"]),
        ("Go into backups and list it.", ["cd(folder='backups')", "ls()"]),
        ("Go into the site copy there and delete app.js from it.",
         ["cd(folder='site')", "rm(file_name='app.js')"]),
    ]),
    ("ep-kofi-late-night", "kofi", [
        ("Create a playlist file called 'late night.txt' inside playlists.",
         ["cd(folder='playlists')", "touch(file_name='late night.txt')"]),
        ("Write 'Night bus, Low cello' into it.",
         ["echo(content='Night bus, Low cello', file_name='late night.txt')"]),
        ("Compare it with focus.txt.", ["diff(file_name1='late night.txt', file_name2='focus.txt')"]),
    ]),
    ("ep-ines-grades", "ines", [
        ("Show all files including hidden ones, then open grades.txt.", ["ls(a=True)", "cat(file_name='grades.txt')"]),
        ("Move grades.txt into semester1.", ["mv(source='grades.txt', destination='semester1')"]),
        ("Go to semester1 and search grades.txt for math.",
         ["cd(folder='semester1')", "grep(file_name='grades.txt', pattern='math')"]),
    ]),
    ("ep-srv-errors", "srv", [
        ("In logs/error.log, show me the lines marked [error].",
         ["cd(folder='logs')", "grep(file_name='error.log', pattern='[error]')"]),
        ("Write the number of those lines, 3, into a new file called error_count.txt.",
         ["touch(file_name='error_count.txt')", "echo(content='3', file_name='error_count.txt')"]),
        ("What is my current path?", ["pwd()"]),
    ]),
    ("ep-sam-review", "sam", [
        ("Move the whole chapters folder into 'to review'.", ["mv(source='chapters', destination='to review')"]),
        ("Go into 'to review', then into chapters, and list it.",
         ["cd(folder='to review')", "cd(folder='chapters')", "ls()"]),
        ("Delete ch03.txt.", ["rm(file_name='ch03.txt')"]),
    ]),
    ("ep-nadia-slugs", "nadia", [
        ("In garden, find the journal lines about slugs.",
         ["cd(folder='garden')", "grep(file_name='journal.txt', pattern='slugs')"]),
        ("Add a note file pests.txt that says 'slugs: beer traps by the lettuce'.",
         ["touch(file_name='pests.txt')", "echo(content='slugs: beer traps by the lettuce', file_name='pests.txt')"]),
        ("How many characters does pests.txt have?", ["wc(file_name='pests.txt', mode='c')"]),
    ]),
    ("ep-ben-open", "ben", [
        ("Make a directory 'open' inside invoices and move inv_002.txt and inv_003.txt into it.",
         ["cd(folder='invoices')", "mkdir(dir_name='open')", "mv(source='inv_002.txt', destination='open')",
          "mv(source='inv_003.txt', destination='open')"]),
        ("List the open folder.", ["cd(folder='open')", "ls()"]),
        ("Show me inv_002.txt.", ["cat(file_name='inv_002.txt')"]),
    ]),
    ("ep-yuki-saves", "yuki", [
        ("Go into game and delete save1.dat.", ["cd(folder='game')", "rm(file_name='save1.dat')"]),
        ("Rename save2.dat to autosave.dat.", ["mv(source='save2.dat', destination='autosave.dat')"]),
        ("Print the last line of config.ini.", ["tail(file_name='config.ini', lines=1)"]),
        ("What's the disk usage of this folder?", ["du()"]),
    ]),
    ("ep-tomasz-warnings", "tomasz", [
        ("Remove the empty archive folder.", ["rmdir(dir_name='archive')"]),
        ("Then show me every file under project.", ["find(path='project')"]),
        ("Go into project, then logs, and grep run.log for WARN.",
         ["cd(folder='project')", "cd(folder='logs')", "grep(file_name='run.log', pattern='WARN')"]),
    ]),
    ("ep-mira-essay", "mira", [
        ("Compare the two essay drafts.",
         ["cd(folder='drafts')", "diff(file_name1='essay_v1.txt', file_name2='essay_v2.txt')"]),
        ("Remove essay_v1.txt and rename essay_v2.txt to essay.txt.",
         ["rm(file_name='essay_v1.txt')", "mv(source='essay_v2.txt', destination='essay.txt')"]),
        ("Count the lines in essay.txt.", ["wc(file_name='essay.txt', mode='l')"]),
    ]),
    ("ep-priya-receipts", "priya", [
        ("Go to receipts and show me the grocery receipt sorted.",
         ["cd(folder='receipts')", "sort(file_name='grocery_05.txt')"]),
        ("Copy hardware_12.txt to the name 'hardware (dec).txt'.",
         ["cp(source='hardware_12.txt', destination='hardware (dec).txt')"]),
        ("Delete the original hardware_12.txt.", ["rm(file_name='hardware_12.txt')"]),
    ]),
    ("ep-oskar-method", "oskar", [
        ("Go into papers and show draft.tex.", ["cd(folder='papers')", "cat(file_name='draft.tex')"]),
        ("Replace draft.tex with: \\section{Method} We sample 42 plots.",
         ["echo(content='\\\\section{Method} We sample 42 plots.', file_name='draft.tex')"]),
        ("How many words does it have now?", ["wc(file_name='draft.tex', mode='w')"]),
    ]),
    ("ep-leila-logo", "leila", [
        ("Where am I, and what's here?", ["pwd()", "ls()"]),
        ("Go into site, then assets, and copy logo.svg to logo_dark.svg.",
         ["cd(folder='site')", "cd(folder='assets')", "cp(source='logo.svg', destination='logo_dark.svg')"]),
        ("List the assets folder.", ["ls()"]),
    ]),
    ("ep-kofi-verse", "kofi", [
        ("In lyrics, show me 'untitled 3.txt'.", ["cd(folder='lyrics')", "cat(file_name='untitled 3.txt')"]),
        ("Write 'the harmattan wind / sings dust into my shoes / and I let it' into it.",
         ["echo(content='the harmattan wind / sings dust into my shoes / and I let it', file_name='untitled 3.txt')"]),
        ("Search it for wind.", ["grep(file_name='untitled 3.txt', pattern='wind')"]),
    ]),
    ("ep-ines-bio", "ines", [
        ("Create a folder semester3.", ["mkdir(dir_name='semester3')"]),
        ("Go to semester1 and copy bio_notes.txt to bio_summary.txt.",
         ["cd(folder='semester1')", "cp(source='bio_notes.txt', destination='bio_summary.txt')"]),
        ("Show the last 2 lines of bio_summary.txt and its word count.",
         ["tail(file_name='bio_summary.txt', lines=2)", "wc(file_name='bio_summary.txt', mode='w')"]),
    ]),
    ("ep-srv-tmp", "srv", [
        ("Go into tmp and clean it out: delete old_cache.bin and the sessions folder.",
         ["cd(folder='tmp')", "rm(file_name='old_cache.bin')", "rmdir(dir_name='sessions')"]),
        ("Go back and list everything, hidden entries included.", ["cd(folder='..')", "ls(a=True)"]),
    ]),
    ("ep-yuki-best-of", "yuki", [
        ("Find the png files.", ["find(path='.', name='.png')"]),
        ("Go to screenshots, make a folder 'best of' and move boss.png into it.",
         ["cd(folder='screenshots')", "mkdir(dir_name='best of')", "mv(source='boss.png', destination='best of')"]),
        ("How much space do the screenshots use? Readable, please.", ["du(human_readable=True)"]),
    ]),
    ("ep-ben-audit", "ben", [
        ("Print 'starting audit' in the terminal and show clients.txt.",
         ["echo(content='starting audit')", "cat(file_name='clients.txt')"]),
        ("Create audit.txt with the text 'clients: 3'.",
         ["touch(file_name='audit.txt')", "echo(content='clients: 3', file_name='audit.txt')"]),
        ("Compare audit.txt with clients.txt.", ["diff(file_name1='audit.txt', file_name2='clients.txt')"]),
    ]),
    ("ep-nadia-harvest", "nadia", [
        ("Make a folder harvest in garden and put a copy of seeds.txt in it.",
         ["cd(folder='garden')", "mkdir(dir_name='harvest')", "cp(source='seeds.txt', destination='harvest')"]),
        ("Go into harvest and overwrite seeds.txt with 'tomatoes: 4 kg'.",
         ["cd(folder='harvest')", "echo(content='tomatoes: 4 kg', file_name='seeds.txt')"]),
        ("Go back to garden and show me the original seeds.txt.",
         ["cd(folder='..')", "cat(file_name='seeds.txt')"]),
    ]),
]
