// The sample explorer of report.html: filters, sorting, a paged table, and each sample's detail on click.
// The page holds an index of the samples; a sample's detail (transcript, exact prompts, gold calls and
// their outputs, tree diff, the same case under the other strategies) is in report-data/chunk-NNNN.js,
// loaded with a <script> element the first time one of its samples is opened (works from a file too).
// Text is always set with textContent (never parsed as HTML).
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const PAGE = 200;
  const METRICS = ["validity", "exact_match", "state_match", "grammar_rejection", "truncated"];
  const filters = {
    run: document.getElementById("f-run"),
    family: document.getElementById("f-family"),
    strategy: document.getElementById("f-strategy"),
    kind: document.getElementById("f-kind"),
    result: document.getElementById("f-result"),
    text: document.getElementById("f-text"),
  };
  const rows = document.getElementById("sample-rows");
  const count = document.getElementById("count");
  const more = document.getElementById("more");
  const chunks = {};
  const waiting = {};
  let shown = PAGE;
  let sortKey = null;
  let sortDir = 1;

  window.reportChunk = function (number, chunk) {
    chunks[number] = chunk;
    (waiting[number] || []).forEach((done) => done[0](chunk));
    delete waiting[number];
  };

  function loadChunk(number) {
    if (chunks[number]) return Promise.resolve(chunks[number]);
    return new Promise((resolve, reject) => {
      const first = !waiting[number];
      (waiting[number] = waiting[number] || []).push([resolve, reject]);
      if (!first) return;
      const script = document.createElement("script");
      script.src = data.chunks[number];
      script.onerror = () => {
        (waiting[number] || []).forEach((done) => done[1](new Error(data.chunks[number] + " could not be loaded: "
          + "keep the report-data folder beside report.html")));
        delete waiting[number];
      };
      document.head.appendChild(script);
    });
  }

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  function options(select, values, label) {
    values.forEach((value, index) => {
      const option = el("option", label ? label(value, index) : value);
      option.value = label ? String(index) : value;
      select.appendChild(option);
    });
  }

  options(filters.run, data.runs, (run) => run.label + " (" + run.engine + ")");
  options(filters.family, data.families);
  options(filters.strategy, data.strategies);
  options(filters.kind, data.kinds);

  function matches(sample) {
    if (filters.run.value !== "" && sample.run !== Number(filters.run.value)) return false;
    if (filters.family.value && sample.family !== filters.family.value) return false;
    if (filters.strategy.value && sample.strategy !== filters.strategy.value) return false;
    if (filters.kind.value && !sample.kinds.includes(filters.kind.value)) return false;
    if (filters.result.value === "pass" && sample.passed !== true) return false;
    if (filters.result.value === "fail" && sample.passed !== false) return false;
    const text = filters.text.value.trim();
    return !text || sample.id.includes(text);
  }

  const SORTS = {
    run: (s) => s.run,
    id: (s) => s.id,
    family: (s) => s.family,
    strategy: (s) => data.strategies.indexOf(s.strategy),
    result: (s) => (s.passed === true ? 2 : s.passed === false ? 0 : 1),
    kinds: (s) => s.kinds.join(" ") || "~",
    latency: (s) => (s.latency_ms === null ? Infinity : s.latency_ms),
    tokens: (s) => (s.tokens === null ? Infinity : s.tokens),
  };

  function sorted(samples) {
    if (!sortKey) return samples;
    const key = SORTS[sortKey];
    return samples.map((s, i) => [key(s), i, s]).sort((a, b) => (a[0] < b[0] ? -sortDir : a[0] > b[0] ? sortDir
      : a[1] - b[1])).map((x) => x[2]);
  }

  function fixed(value, digits) {
    return value === null || value === undefined ? "" : Number(value).toFixed(digits);
  }

  function result(sample) {
    if (sample.passed === true) return el("td", "pass", "pass");
    if (sample.passed === false) return el("td", "fail", "fail");
    return el("td", "n/a", "na");
  }

  function section(parent, title, lines) {
    parent.appendChild(el("h4", title));
    if (!lines.length) {
      parent.appendChild(el("p", "(none)", "na"));
      return;
    }
    parent.appendChild(el("pre", lines.join("\n")));
  }

  function promptBlock(parent, chunk, id) {
    const box = el("details", null, "prompt");
    const text = id ? chunk.prompts[id] : undefined;
    box.appendChild(el("summary", text === undefined ? "Exact prompt sent: not kept by this run"
      : "Exact prompt sent (" + text.length + " characters, as the family's chat template renders it)"));
    if (text !== undefined) box.appendChild(el("pre", text));
    parent.appendChild(box);
  }

  function siblings(sample) {
    return data.samples.filter((s) => s.run === sample.run && s.case === sample.case && s.family === sample.family
      && s.epoch === sample.epoch).sort((a, b) => SORTS.strategy(a) - SORTS.strategy(b));
  }

  function sideBySide(box, sample, chunk) {
    const others = siblings(sample);
    if (others.length < 2) return;
    box.appendChild(el("h4", "The same case under each strategy (" + sample.family + ", epoch " + sample.epoch + ")"));
    const table = el("table", null, "side-by-side");
    const head = el("tr");
    ["strategy", "result", "error kinds", "first answer", "parsed calls"].forEach((h) => head.appendChild(el("th", h)));
    table.appendChild(head);
    others.forEach((other) => {
      const detail = chunk.samples[other.run + "/" + other.id];
      const step = detail && detail.steps.length ? detail.steps[0] : null;
      const tr = el("tr", null, other.id === sample.id ? "this" : "");
      tr.appendChild(el("td", other.strategy));
      tr.appendChild(result(other));
      tr.appendChild(el("td", other.kinds.join(" ")));
      tr.appendChild(el("td", step && step.output !== null ? step.output.slice(0, 400) : ""));
      tr.appendChild(el("td", step ? step.calls.join("; ") : ""));
      table.appendChild(tr);
    });
    box.appendChild(table);
  }

  function detail(sample, chunk) {
    const box = el("div", null, "detail");
    const mine = chunk.samples[sample.run + "/" + sample.id];
    const scores = METRICS.filter((m) => m in mine.scores).map((m) => {
      const [value, kind] = mine.scores[m];
      return m + ": " + (value === null ? "n/a" : value) + (kind ? "  (" + kind + ")" : "");
    });
    section(box, "Scores", scores);
    if (mine.error) section(box, "Sample error", [sample.status + ": " + mine.error]);
    const run = data.runs[sample.run];
    const found = chunk.cases[sample.run + "/" + sample.case];
    const prompt = [];
    if (run.system_prompt) prompt.push("system: " + run.system_prompt.trim());
    if (found) prompt.push(...found.messages);
    section(box, "Prompt (" + (found && found.messages.length ? "case " + sample.case : "the suite was not found") + ")",
      prompt);
    section(box, "Gold answer", found ? found.gold : []);
    section(box, "Gold calls and their tool output", run.details_missing ? [run.details_missing]
      : found ? found.gold_outputs.map((g) =>
        (g.turn === null ? "" : "[turn " + g.turn + "] ") + g.call + " -> " + (g.output === null ? "?" : g.output)) : []);
    if (mine.diff.length) section(box, mine.diff_title, mine.diff);
    sideBySide(box, sample, chunk);
    box.appendChild(el("h4", "Model calls (" + mine.steps.length + ")"));
    mine.steps.forEach((step, index) => {
      const part = el("div", null, "step");
      const head = "call " + (index + 1) + (step.turn === null ? "" : ", turn " + step.turn)
        + ": latency " + fixed(step.latency_ms, 1) + " ms, ttft " + fixed(step.ttft_ms, 1) + " ms, "
        + (step.tokens === null ? "?" : step.tokens) + " tokens, finish " + (step.finish_reason || "?");
      part.appendChild(el("div", head));
      promptBlock(part, chunk, step.prompt);
      section(part, "Raw output", step.output === null ? [] : [step.output]);
      section(part, "Parsed calls", step.calls);
      if (step.parse_errors.length) section(part, "Parse errors", step.parse_errors);
      section(part, "Tool results", step.tool_results.map((r) =>
        r.name + (r.error_kind ? " [" + r.error_kind + "]" : "") + " -> " + r.output
        + (r.duration_us === null ? "" : "  (" + fixed(r.duration_us, 0) + " µs)")));
      box.appendChild(part);
    });
    return box;
  }

  function toggle(tr, sample) {
    const next = tr.nextElementSibling;
    if (next && next.classList.contains("detail-row")) {
      next.remove();
      tr.classList.remove("open");
      return;
    }
    const row = el("tr", null, "detail-row");
    const cell = el("td", "loading...", "detail");
    cell.colSpan = 8;
    row.appendChild(cell);
    tr.after(row);
    tr.classList.add("open");
    loadChunk(sample.chunk).then((chunk) => {
      cell.replaceChildren(detail(sample, chunk));
    }, (error) => {
      cell.replaceChildren(el("p", String(error.message), "fail"));
    });
  }

  function render() {
    const matching = sorted(data.samples.filter(matches));
    rows.replaceChildren();
    matching.slice(0, shown).forEach((sample) => {
      const tr = el("tr", null, "sample");
      tr.dataset.id = sample.id;
      tr.dataset.family = sample.family;
      tr.dataset.strategy = sample.strategy;
      tr.appendChild(el("td", data.runs[sample.run].label));
      tr.appendChild(el("td", sample.id));
      tr.appendChild(el("td", sample.family));
      tr.appendChild(el("td", sample.strategy));
      tr.appendChild(result(sample));
      const kinds = el("td", null, "kinds");
      sample.kinds.forEach((kind) => kinds.appendChild(el("code", kind)));
      tr.appendChild(kinds);
      tr.appendChild(el("td", fixed(sample.latency_ms, 1)));
      tr.appendChild(el("td", sample.tokens));
      tr.addEventListener("click", () => toggle(tr, sample));
      rows.appendChild(tr);
    });
    const visible = Math.min(shown, matching.length);
    count.textContent = "Showing " + visible + " of " + matching.length + " matching samples ("
      + data.samples.length + " in all). Click a sample for its prompt, output, calls, tool results and gold;"
      + " click a column's heading to sort by it.";
    more.hidden = matching.length <= shown;
  }

  document.querySelectorAll("#sample-table th[data-sort]").forEach((th) => th.addEventListener("click", () => {
    const key = th.dataset.sort;
    sortDir = sortKey === key ? -sortDir : 1;
    sortKey = key;
    document.querySelectorAll("#sample-table th[data-sort]").forEach((other) => {
      other.dataset.order = other === th ? (sortDir === 1 ? "ascending" : "descending") : "";
    });
    shown = PAGE;
    render();
  }));
  Object.values(filters).forEach((input) => input.addEventListener("input", () => {
    shown = PAGE;
    render();
  }));
  more.addEventListener("click", () => {
    shown += PAGE;
    render();
  });
  document.querySelectorAll(".kind-link").forEach((link) => link.addEventListener("click", () => {
    filters.run.value = link.dataset.run;
    filters.family.value = link.dataset.family;
    filters.strategy.value = link.dataset.strategy;
    filters.kind.value = link.dataset.kind;
    filters.result.value = "";
    filters.text.value = "";
    shown = PAGE;
    render();
  }));
  // A link to one sample (harness compare's flip list): report.html#sample=<sample id> shows it, opened.
  function openLinkedSample() {
    const match = /^#sample=(.+)$/.exec(window.location.hash);
    if (!match) return;
    const id = decodeURIComponent(match[1]);
    Object.values(filters).forEach((input) => { input.value = ""; });
    filters.text.value = id;
    shown = PAGE;
    render();
    const tr = Array.from(rows.querySelectorAll("tr.sample")).find((row) => row.dataset.id === id);
    if (!tr) return;
    const sample = data.samples.find((s) => s.id === id);
    toggle(tr, sample);
    tr.scrollIntoView();
  }
  window.addEventListener("hashchange", openLinkedSample);
  render();
  openLinkedSample();
})();
