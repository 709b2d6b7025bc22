// The Chronograph explorer: a neighbourhood of the graph at any moment of the log, every version
// of an entity, the audit feed. Reads only. Everything shown is the memory's own text, so it is
// set as text, never as markup.
"use strict";

const api = "/ui/api/";
const $ = (id) => document.getElementById(id);
const state = {
  workspace: new URLSearchParams(location.search).get("workspace") || "default",
  head: 0,
  asOf: null,          // null: now
  focus: {mode: "top"}, // top | search (q) | names (names)
  feedAfter: 0,
  feedLoads: 0,        // how many times the feed was loaded whole: a follow begun before the last one is stale
  following: false,    // a follow is under way: the next tick waits for it
  feedLoaded: 0,       // the load the feed shows (0: none yet)
  selected: null,
};
window.chronograph = {ready: false, redraws: [], state};

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function say(text) { $("status").textContent = text; }

function problem(text) {
  const box = $("problem");
  box.hidden = !text;
  box.textContent = text || "";
}

async function get(path, params = {}) {
  const query = new URLSearchParams({workspace: state.workspace});
  for (const [key, value] of Object.entries(params)) {
    if (Array.isArray(value)) value.forEach((item) => query.append(key, item));  // a name may hold any character
    else if (value !== null && value !== undefined && value !== "") query.set(key, value);
  }
  let response;
  try {
    response = await fetch(api + path + "?" + query.toString(), {headers: {Accept: "application/json"}});
  } catch (error) {
    problem("The server cannot be reached (" + error.message + "). Is chronograph still running?");
    throw error;
  }
  let body = {};
  try { body = await response.json(); } catch (error) { body = {error: response.statusText}; }
  if (!response.ok) {
    const failure = new Error(body.error || response.statusText);
    failure.status = response.status;
    if (response.status >= 500 || response.status === 401) problem(body.error || response.statusText);
    throw failure;
  }
  problem("");
  return body;
}

// --- colours: one per type, the same in every view of a session, distinct for the first twelve ----

// Tableau's ten, told apart by most eyes, and two more; past them, hues a golden angle apart.
const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f",
                 "#ff9da7", "#6b6ecf", "#bab0ac", "#2f4b7c"];
const colours = new Map();
function colour(type) {
  if (!colours.has(type)) {
    const n = colours.size;
    colours.set(type, n < PALETTE.length ? PALETTE[n]
      : `hsl(${Math.round(n * 137.508) % 360}, ${n % 2 ? 55 : 70}%, ${n % 3 ? 40 : 55}%)`);
  }
  return colours.get(type);
}

function learnTypes(counts) {
  // The workspace's types, most common first, take the palette in that order when the page
  // opens; a type met later (in the past, or written since) takes the next colour.
  Object.entries(counts).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).forEach(([type]) => colour(type));
}

function count(n, one, many) { return `${n.toLocaleString("en")} ${n === 1 ? one : many}`; }

// --- the graph ---------------------------------------------------------------------------------

const cy = cytoscape({
  container: $("graph"),
  minZoom: 0.1,
  maxZoom: 3,
  style: [
    {selector: "node", style: {
      "background-color": "data(colour)", label: "data(label)", color: "#1b1f24", "font-size": 11,
      "text-valign": "bottom", "text-margin-y": 3, width: "mapData(degree, 0, 20, 18, 46)",
      height: "mapData(degree, 0, 20, 18, 46)", "text-max-width": 120, "text-wrap": "ellipsis"}},
    {selector: "node.bridge", style: {"background-opacity": 0.25, "border-width": 2, "border-color": "data(colour)",
                                      color: "#545d68"}},
    {selector: "node.selected", style: {"border-width": 4, "border-color": "#0b5cad"}},
    {selector: "node.created", style: {"border-width": 4, "border-color": "#17652b"}},
    {selector: "node.changed", style: {"border-width": 4, "border-color": "#8a5300"}},
    {selector: "node.deleted", style: {opacity: 0.45, "border-width": 3, "border-style": "dashed",
                                       "border-color": "#a4161a"}},
    {selector: "edge", style: {
      width: 1.6, "line-color": "#8c959f", "target-arrow-color": "#8c959f", "target-arrow-shape": "triangle",
      "curve-style": "bezier", label: "data(label)", "font-size": 9, color: "#545d68",
      "text-rotation": "autorotate", "text-background-color": "#fff", "text-background-opacity": 0.8}},
    {selector: "edge.invalid", style: {"line-style": "dashed", opacity: 0.55}},
  ],
});

cy.on("tap", "node", (event) => showEntity(event.target.id()));
cy.on("dbltap", "node", (event) => expand(event.target.id()));

function draw(answer, {layout = "all"} = {}) {
  const started = performance.now();
  const wanted = new Set(answer.entities.map((e) => e.name));
  cy.batch(() => {
    cy.nodes().filter((n) => !wanted.has(n.id())).remove();
    const fresh = [];
    for (const entity of answer.entities) {
      const data = {id: entity.name, label: entity.name, type: entity.entityType, degree: entity.degree,
                    colour: colour(entity.entityType)};
      const node = cy.getElementById(entity.name);
      if (node.nonempty()) { node.data(data); node.toggleClass("bridge", Boolean(entity.bridge)); }
      else fresh.push({group: "nodes", data, classes: entity.bridge ? "bridge" : ""});
    }
    cy.add(fresh);
    cy.edges().remove();
    cy.add(answer.relations.map((r) => ({group: "edges", classes: r.valid === false ? "invalid" : "",
      data: {id: `${r.from}\u0000${r.relationType}\u0000${r.to}`, source: r.from, target: r.to,
             label: r.relationType}})));
  });
  const placed = cy.nodes().filter((n) => n.position("x") !== 0 || n.position("y") !== 0);
  if (layout === "all" || placed.length === 0) {
    // Laid out in a box of the panel's shape, so that a few dozen entities fill it at a zoom
    // where their names can be read (left to itself, cose grows tall and the labels tiny).
    cy.layout({name: "cose", animate: false, fit: false, randomize: true, nodeRepulsion: 3000,
               idealEdgeLength: 40, gravity: 1.5, nodeDimensionsIncludeLabels: true,
               boundingBox: {x1: 0, y1: 0, w: Math.max(cy.width(), 200), h: Math.max(cy.height(), 200)}}).run();
  } else {
    // A newcomer goes beside a neighbour already placed (or at the middle): the rest stay put,
    // so that moving through time changes what is there, not where everything is.
    const centre = {x: (cy.extent().x1 + cy.extent().x2) / 2, y: (cy.extent().y1 + cy.extent().y2) / 2};
    cy.nodes().difference(placed).forEach((node, index) => {
      const anchor = node.neighborhood("node").filter((n) => placed.contains(n)).first();
      const at = anchor.nonempty() ? anchor.position() : centre;
      const angle = (index * 2.39996) % (2 * Math.PI);
      node.position({x: at.x + 110 * Math.cos(angle), y: at.y + 110 * Math.sin(angle)});
    });
  }
  if (layout === "all") {
    cy.fit(undefined, 40);
    if (cy.zoom() > 1.4) { cy.zoom(1.4); cy.center(); }  // a handful of entities: no giant circles
  }
  shownList(answer.entities);
  const ms = performance.now() - started;
  window.chronograph.redraws.push(ms);
  return ms;
}

function shownList(entities) {
  const list = $("shown-list");
  list.replaceChildren(...entities.map((e) => el("li", {},
    el("button", {type: "button", onclick: () => showEntity(e.name)}, e.name), " ",
    el("span", {class: "muted"}, `${e.entityType}, ${count(e.degree, "relation", "relations")}`
                                 + (e.bridge ? ", links what was found" : "")))));
}

async function legend() {
  // The counts of the moment the graph shows: now, or the slider's position.
  const at = state.asOf;
  const asked = ++latest.legend;
  const overview = await get("overview", {asOf: at ?? ""});
  if (asked !== latest.legend) return;
  const items = Object.entries(overview.entityTypes).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const box = $("legend");
  box.replaceChildren(
    el("li", {}, el("strong", {}, at === null ? "Now:" : `At position ${at}:`), " ",
       `${count(overview.entities, "entity", "entities")}, ${count(overview.relations, "relation", "relations")}`),
    ...items.slice(0, 24).map(([type, n]) => el("li", {},
      el("span", {class: "swatch", style: `background:${colour(type)}`, "aria-hidden": "true"}), `${type} ${n}`)),
    ...(items.length > 24 ? [el("li", {class: "muted"}, `and ${count(items.length - 24, "type", "types")} more`)]
      : []));
  box.dataset.position = at === null ? "now" : String(at);
  box.classList.remove("stale");
}

let legendTimer = null;
function legendSoon() {
  // After the slider comes to rest: counting a past moment folds the whole graph then.
  $("legend").classList.add("stale");
  clearTimeout(legendTimer);
  legendTimer = setTimeout(() => legend().catch(() => {}), 250);
}

function focusParams() {
  const focus = state.focus;
  const params = {asOf: state.asOf ?? "", validAt: $("validAt").value ? $("validAt").value + "T12:00:00Z" : ""};
  if (focus.mode === "search") params.q = focus.q;
  if (focus.mode === "names") params.names = focus.names;
  return params;
}

const latest = {graph: 0, diff: 0, legend: 0};
// Answers can arrive out of order while a slider moves: only the newest question's is drawn.

async function refresh({layout = "all"} = {}) {
  const began = performance.now();
  const asked = ++latest.graph;
  const answer = await get("graph", focusParams());
  if (asked !== latest.graph) return answer;
  if (state.focus.mode === "names") {  // whoever joined the view stays in it as time moves on
    state.focus.names = [...new Set([...state.focus.names, ...answer.entities.map((e) => e.name)])];
  }
  const ms = draw(answer, {layout});
  const at = state.asOf === null ? "now" : `position ${state.asOf}`;
  const bridges = answer.entities.filter((e) => e.bridge).length;
  const what = state.focus.mode === "search"
    ? `${count(answer.entities.length - bridges, "entity", "entities")} found`
      + (bridges ? ` and ${count(bridges, "entity", "entities")} relating them` : "")
    : `${count(answer.entities.length, "entity", "entities")} shown`;
  if (state.asOf === 0) say("Before the first event: the memory was empty.");
  else say(`${what}, ${count(answer.relations.length, "relation", "relations")}, as of ${at} `
           + `(${Math.round(performance.now() - began)} ms, drawn in ${Math.round(ms)} ms)`);
  if (state.selected) markSelected();
  return answer;
}

async function expand(name) {
  const near = await get("graph", {around: name, asOf: state.asOf ?? ""});
  const names = new Set(cy.nodes().map((n) => n.id()));
  near.entities.forEach((e) => names.add(e.name));
  state.focus = {mode: "names", names: [...names]};
  await refresh({layout: "new"});
  say(`Expanded ${name}: ${count(near.entities.length - 1, "neighbour", "neighbours")}.`);
}

// --- time --------------------------------------------------------------------------------------

let sliding = null;
function onSlide() {
  // Moving through time follows the neighbourhood on screen (and whoever joins it then), so that
  // the cost is the view's, not the graph's; "Most connected" and a search ask anew at that time.
  if (state.focus.mode !== "names") state.focus = {mode: "names", names: cy.nodes().map((n) => n.id())};
  const value = Number($("slider").value);
  state.asOf = value >= state.head ? null : value;
  $("moment").textContent = state.asOf === null ? "now" : `position ${value} of ${state.head}`;
  clearTimeout(sliding);
  sliding = setTimeout(async () => {
    const began = performance.now();
    await refresh({layout: "new"});
    window.chronograph.lastSlide = performance.now() - began;
    legendSoon();
    if ($("diffmode").checked) compare();
  }, 40);
}

async function compare() {
  const from = Number($("slider").value), to = Number($("slider2").value);
  $("moment2").textContent = `position ${to}`;
  const asked = ++latest.diff;
  const answer = await get("diff", {from, to});
  if (asked !== latest.diff) return;
  cy.nodes().removeClass("created changed deleted");
  const list = answer.changes.map((c) => {
    if (c.kind === "entity") cy.getElementById(c.what).addClass(c.change);
    return el("li", {class: c.change === "created" ? "added" : c.change === "deleted" ? "removed" : "changed"},
              `${c.change} ${c.kind} ${c.what}`, c.detail ? el("span", {class: "muted"}, ` (${c.detail})`) : null);
  });
  $("diff").replaceChildren(...(list.length ? list : [el("li", {class: "muted"}, "Nothing changed between them.")]));
  select("changes");
}

// --- an entity, every version ---------------------------------------------------------------------

function markSelected() {
  cy.nodes().removeClass("selected");
  cy.getElementById(state.selected).addClass("selected");
}

async function showEntity(name) {
  state.selected = name;
  markSelected();
  select("entity");
  const panel = $("entity");
  panel.replaceChildren(el("p", {class: "muted"}, `Reading the history of ${name}...`));
  let page;
  try {
    page = await get("entity", {name});
  } catch (error) {
    panel.replaceChildren(el("p", {}, error.status === 404 ? `${name} never existed here.` : error.message));
    return;
  }
  const versions = page.versions.map((v) => version(v));
  const trueOn = $("validAt").value;
  let now = [];
  if (page.live || state.asOf !== null) {  // what it says at the slider's moment, true on the chosen date
    const shown = await get("graph", {names: [name], asOf: state.asOf ?? state.head,
                                      validAt: trueOn ? trueOn + "T12:00:00Z" : ""});
    const entity = shown.entities.find((e) => e.name === name);
    if (entity) {
      now = [el("h3", {}, `What it says ${state.asOf === null ? "now" : "at position " + state.asOf}`
                          + (trueOn ? `, true on ${trueOn}` : "")),
             el("ul", {}, ...entity.observations.map((o) => el("li", {class: entity.valid[o] === false ? "invalid" : ""},
                                                               o, entity.valid[o] === false ? " (not true then)" : "")))];
    }
  }
  panel.replaceChildren(
    el("h2", {}, name, page.live ? null : el("span", {class: "badge removed"}, "deleted")),
    el("p", {}, el("button", {type: "button", onclick: () => expand(name)}, "Show its neighbours")),
    ...now,
    el("h3", {}, count(page.versions.length, "version", "versions") + (page.more ? ", the newest" : "")),
    ...(page.more ? [el("p", {class: "muted"}, "Older versions are not shown: chronograph audit or get_entity_history "
                                               + "lists them all.")] : []),
    ...versions,
    el("h3", {}, "Relations over time"),
    ...(page.relations.length ? page.relations.map(relationHistory) : [el("p", {class: "muted"}, "None, ever.")]),
    ...(page.moreRelations ? [el("p", {class: "muted"}, `Only the first ${page.relations.length} relations are shown.`)]
      : []),
  );
}

function version(v) {
  const parts = [];
  const diff = v.diff || {};
  if (diff.created) parts.push(el("div", {class: "added"}, `created as ${v.state?.entityType ?? ""}`));
  if (diff.restored) {
    parts.push(el("div", {class: "added"}, `restored as it was at version ${diff.restored}`
                                           + (diff.restores ? ` (position ${diff.restores})` : "")));
  }
  if (diff.merged) parts.push(el("div", {class: "removed"}, `merged into ${diff.merged}`));
  if (diff.deleted) parts.push(el("div", {class: "removed"}, "deleted"));
  if (diff.name) parts.push(el("div", {class: "changed"}, `renamed ${diff.name[0]} → ${diff.name[1]}`));
  if (diff.entityType) parts.push(el("div", {class: "changed"}, `type ${diff.entityType[0]} → ${diff.entityType[1]}`));
  for (const text of diff.added || []) parts.push(el("div", {class: "added"}, "+ " + text));
  for (const text of diff.removed || []) parts.push(el("div", {class: "removed"}, "− " + text));
  if (diff.metadata) parts.push(el("div", {class: "changed"}, "metadata: " + diff.metadata.join(", ")));
  if (v.eventType === "content_erased" || v.eventType === "entity_forgotten") {
    parts.push(el("div", {class: "muted"}, "erased (forgotten): what it said is gone"));
  }
  return el("div", {class: "version"},
    el("div", {}, el("strong", {}, `v${v.version}`), ` ${v.eventType}`),
    el("div", {class: "meta"}, `${v.recordedAt} · ${v.actor} · call ${String(v.correlationId).slice(0, 12)}`
                               + ` · position ${v.position}`),
    ...parts);
}

function relationHistory(relation) {
  const first = relation.versions[0]?.state || relation.versions.find((v) => v.state)?.state;
  const title = first ? `${first.from} -[${first.relationType}]→ ${first.to}` : "a relation";
  return el("div", {class: "version"}, el("div", {}, title),
    ...relation.versions.map((v) => el("div", {class: "meta"}, `v${v.version} ${v.eventType} · ${v.recordedAt}`
                                                                + ` · ${v.actor}`)));
}

// --- the audit feed, followed live ---------------------------------------------------------------

function auditParams() {
  const form = new FormData($("audit-filters"));
  const params = {};
  for (const [key, value] of form.entries()) {
    if (!value) continue;
    // An actor, principal or session may hold spaces ("chronograph forget"); a list of types may not.
    params[key] = (key === "since" || key === "until") ? new Date(value).toISOString()
      : key === "types" ? value.replace(/\s/g, "") : value.trim();
  }
  return params;
}

function feedItem(e, fresh) {
  return el("li", {class: fresh ? "new" : "", "data-position": e.position},
    el("strong", {}, e.type), " ", e.subject, el("div", {class: "muted"},
      `${e.recordedAt} · ${e.actor}` + (e.principal && e.principal !== "local" ? ` (as ${e.principal})` : "")
      + ` · position ${e.position}`));
}

async function loadFeed() {
  const loads = ++state.feedLoads;
  const answer = await get("audit", {...auditParams(), limit: 100});
  if (loads !== state.feedLoads) return;  // a later load (new filters) answers instead
  $("feed").replaceChildren(...answer.events.map((e) => feedItem(e, false)));
  state.feedAfter = Math.max(answer.through ?? 0, answer.events.length ? answer.events[0].position : 0);
  state.feedLoaded = loads;
}

async function followFeed() {
  // Only from a feed loaded whole, one follow at a time, and only while no load has begun since:
  // otherwise the events the load shows come again, marked new.
  if (!$("live").checked || !state.feedLoaded || state.following) return;
  const loads = state.feedLoads, after = state.feedAfter;
  state.following = true;
  try {
    const answer = await get("audit", {...auditParams(), after, limit: 100});
    if (loads !== state.feedLoads || after !== state.feedAfter) return;  // a load answered meanwhile
    // Looked at up to `through`, matches or not: the next follow reads from there. A follow's
    // events come oldest first (a burst past its limit goes on at the next): newest on top.
    state.feedAfter = Math.max(after, answer.through);
    if (answer.events.length) {
      $("feed").prepend(...answer.events.slice().reverse().map((e) => feedItem(e, true)));
      const overview = await get("overview", {});
      grow(overview.head);
      if (state.asOf === null) legendSoon();
    }
  } catch (error) { /* the problem banner says it */ } finally {
    state.following = false;
  }
}

function grow(head) {
  const atNow = state.asOf === null;
  state.head = head;
  for (const id of ["slider", "slider2"]) $(id).max = head;
  if (atNow) $("slider").value = head;
}

// --- tabs, forms, start ----------------------------------------------------------------------------

function select(panel) {
  for (const name of ["entity", "shown", "audit", "changes"]) {
    $(name).hidden = name !== panel;
    $("tab-" + name).setAttribute("aria-selected", String(name === panel));
  }
}

for (const name of ["entity", "shown", "audit", "changes"]) $("tab-" + name).addEventListener("click", () => select(name));
$("search").addEventListener("submit", async (event) => {
  event.preventDefault();
  const q = $("q").value.trim();
  state.focus = q ? {mode: "search", q} : {mode: "top"};
  await refresh();
});
$("top").addEventListener("click", () => { state.focus = {mode: "top"}; refresh(); });
$("slider").addEventListener("input", onSlide);
$("slider2").addEventListener("input", () => compare());
$("diffmode").addEventListener("change", () => {
  $("slider2").disabled = !$("diffmode").checked;
  if ($("diffmode").checked) compare(); else { cy.nodes().removeClass("created changed deleted"); }
});
$("now").addEventListener("click", () => { $("slider").value = state.head; onSlide(); });
$("validAt").addEventListener("change", () => refresh({layout: "new"}));
$("audit-filters").addEventListener("submit", (event) => { event.preventDefault(); loadFeed(); });
$("workspace").addEventListener("change", () => {
  state.workspace = $("workspace").value;
  state.focus = {mode: "top"};
  colours.clear();
  start();
});

async function start() {
  try {
    const overview = await get("overview", {});
    $("store").textContent = overview.store;
    $("workspace").replaceChildren(...(overview.workspaces.length ? overview.workspaces : [{name: "default"}])
      .map((w) => el("option", {value: w.name}, w.name)));
    $("workspace").value = state.workspace;
    grow(overview.head);
    $("slider").value = overview.head;
    $("slider2").value = overview.head;
    $("moment").textContent = "now";
    learnTypes(overview.entityTypes);
    await refresh();
    await legend();
    await loadFeed();
    window.chronograph.ready = true;
    performance.mark("chronograph-first-graph");
    // Warm what moving through time needs (the server indexes the relations' history once).
    get("graph", {names: cy.nodes().map((n) => n.id()).slice(0, 1), asOf: Math.max(0, state.head - 1)})
      .catch(() => {});
  } catch (error) {
    say("");
  }
}

start();
setInterval(followFeed, 1500);
