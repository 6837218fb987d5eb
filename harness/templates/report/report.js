// The sample explorer of report.html: filters, a paged table, and each sample's transcript on click.
// Data comes from the page's JSON element; text is always set with textContent (never parsed as HTML).
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
  let shown = PAGE;

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

  function detail(sample) {
    const box = el("div", null, "detail");
    const scores = METRICS.filter((m) => m in sample.scores).map((m) => {
      const [value, kind] = sample.scores[m];
      return m + ": " + (value === null ? "n/a" : value) + (kind ? "  (" + kind + ")" : "");
    });
    section(box, "Scores", scores);
    if (sample.error) section(box, "Sample error", [sample.status + ": " + sample.error]);
    const run = data.runs[sample.run];
    const found = data.cases[sample.run + "/" + sample.case];
    const prompt = [];
    if (run.system_prompt) prompt.push("system: " + run.system_prompt.trim());
    if (found) prompt.push(...found.messages);
    section(box, "Prompt (" + (found ? "case " + sample.case : "the suite was not found") + ")", prompt);
    section(box, "Gold answer", found ? found.gold : []);
    box.appendChild(el("h4", "Model calls (" + sample.steps.length + ")"));
    sample.steps.forEach((step, index) => {
      const part = el("div", null, "step");
      const head = "call " + (index + 1) + (step.turn === null ? "" : ", turn " + step.turn)
        + ": latency " + fixed(step.latency_ms, 1) + " ms, ttft " + fixed(step.ttft_ms, 1) + " ms, "
        + (step.tokens === null ? "?" : step.tokens) + " tokens, finish " + (step.finish_reason || "?");
      part.appendChild(el("div", head));
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
    const cell = el("td", null, "detail");
    cell.colSpan = 8;
    cell.appendChild(detail(sample));
    row.appendChild(cell);
    tr.after(row);
    tr.classList.add("open");
  }

  function render() {
    const matching = data.samples.filter(matches);
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
      + data.samples.length + " in all). Click a sample for its prompt, output, calls, tool results and gold.";
    more.hidden = matching.length <= shown;
  }

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
