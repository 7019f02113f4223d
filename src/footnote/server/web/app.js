// footnote's page: ask, watch the answer stream in, check every footnote.
// Plain script, no build step; it speaks the same /v1 API as every other client.
"use strict";

const Footnote = (() => {
  const KEY_STORAGE = "footnote.apiKey";
  const THREADS_STORAGE = "footnote.threads";
  const RELATED_STORAGE = "footnote.suggestRelated";
  const COLLECTIONS_STORAGE = "footnote.collections";
  const MAX_THREADS = 30;
  const $ = (id) => document.getElementById(id);
  const views = {};

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  function element(tag, props = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props)) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "className") node.className = value;
      else if (name === "text") node.textContent = value;
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }

  // --- API access ---------------------------------------------------------------------------

  function apiKey() {
    try { return localStorage.getItem(KEY_STORAGE) || ""; } catch { return ""; }
  }

  function setApiKey(key) {
    try {
      if (key) localStorage.setItem(KEY_STORAGE, key);
      else localStorage.removeItem(KEY_STORAGE);
    } catch { /* private mode: the key lasts for this page only */ }
  }

  async function errorOf(response) {
    let message = `${response.status} ${response.statusText}`.trim();
    try {
      const body = await response.json();
      if (body && body.error && body.error.message) message = body.error.message;
    } catch { /* not JSON: keep the status line */ }
    if (response.status === 401) {
      message = `${message}. Enter the API key under Settings.`;
    }
    return new ApiError(response.status, message);
  }

  function authHeaders(headers = {}) {
    const all = new Headers(headers);
    const key = apiKey();
    if (key) all.set("Authorization", `Bearer ${key}`);
    return all;
  }

  // `quiet`: a 401 is the caller's to handle, with no notice pointing to Settings.
  async function api(path, { quiet = false, ...options } = {}) {
    let response;
    try {
      response = await fetch(path, { ...options, headers: authHeaders(options.headers) });
    } catch (err) {
      throw new ApiError(0, `the server could not be reached (${err.message}); is footnote serve running?`);
    }
    if (!response.ok) {
      const error = await errorOf(response);
      if (error.status === 401 && !quiet) showNotice(error.message, true);
      throw error;
    }
    return response;
  }

  function showNotice(message, linkToSettings = false) {
    const notice = $("notice");
    notice.replaceChildren(message);
    if (linkToSettings) notice.append(" ", element("a", { href: "#/settings", text: "Open Settings" }));
    notice.hidden = false;
  }

  function clearNotice() {
    $("notice").hidden = true;
  }

  // --- Views --------------------------------------------------------------------------------

  function route() {
    const name = (location.hash.replace(/^#\/?/, "") || "ask").split("/")[0];
    const shown = views[name] ? name : "ask";
    for (const section of document.querySelectorAll(".view")) {
      section.hidden = section.id !== `view-${shown}`;
    }
    for (const link of document.querySelectorAll("[data-view-link]")) {
      if (link.dataset.viewLink === shown) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    FootnoteAnswer.closeSource();
    if (views[shown]) views[shown]();
  }

  function registerView(name, onShow) {
    views[name] = onShow;
  }

  // --- Threads ------------------------------------------------------------------------------

  let threads = loadThreads();
  let current = null;
  let busy = false;

  function loadThreads() {
    try {
      const saved = JSON.parse(localStorage.getItem(THREADS_STORAGE) || "[]");
      return Array.isArray(saved) ? saved : [];
    } catch { return []; }
  }

  function saveThreads() {
    try {
      localStorage.setItem(THREADS_STORAGE, JSON.stringify(threads.slice(0, MAX_THREADS)));
    } catch { /* storage full or off: threads last for this page */ }
  }

  function newThread() {
    current = null;
    renderThreads();
    $("turns").replaceChildren();
    $("question").focus();
  }

  function openThread(thread) {
    current = thread;
    renderThreads();
    $("turns").replaceChildren(...thread.turns.map((turn) => FootnoteAnswer.turnElement(turn)));
  }

  function renderThreads() {
    const items = threads.map((thread) => element("li", {},
      element("button", {
        type: "button",
        "aria-current": thread === current ? "true" : null,
        onclick: () => openThread(thread),
        text: thread.title,
      })));
    $("thread-list").replaceChildren(...items);
  }

  // --- Follow-up suggestions ----------------------------------------------------------------
  // Off unless the reader turns them on: suggesting questions costs one more generation per answer.

  function loadSuggestRelated() {
    try { return localStorage.getItem(RELATED_STORAGE) === "true"; } catch { return false; }
  }

  function saveSuggestRelated(on) {
    try {
      localStorage.setItem(RELATED_STORAGE, String(on));
    } catch { /* private mode: the choice lasts for this page */ }
  }

  // --- Collections --------------------------------------------------------------------------
  // The picker offers the collections the key can read. Ticking none asks them all, and so does
  // a page that cannot list them (no key yet): then no `collections` field is sent at all.

  let collections = []; // as GET /v1/collections listed them: {name, documents, chunks, writable}
  let chosen = loadChosen();
  let listing = 0; // the latest listing asked for: an older one that answers late is dropped
  const collectionListeners = [];

  function loadChosen() {
    try {
      const saved = JSON.parse(localStorage.getItem(COLLECTIONS_STORAGE) || "[]");
      return Array.isArray(saved) ? saved.filter((name) => typeof name === "string") : [];
    } catch { return []; }
  }

  function saveChosen() {
    try {
      localStorage.setItem(COLLECTIONS_STORAGE, JSON.stringify(chosen));
    } catch { /* private mode: the choice lasts for this page */ }
  }

  // The collections to send with a question, or null for every one the key can read.
  function chosenCollections() {
    if (collections.length < 2) return null; // one collection or none: nothing to choose
    const listed = new Set(collections.map((collection) => collection.name));
    const picked = chosen.filter((name) => listed.has(name));
    return picked.length ? picked : null;
  }

  async function refreshCollections() {
    const asked = ++listing;
    let listed = [];
    try {
      listed = (await (await api("/v1/collections", { quiet: true })).json()).data;
    } catch { /* no key yet, or an older server: the page asks every collection */ }
    if (asked !== listing) return;
    collections = listed;
    renderPicker();
    for (const listener of collectionListeners) listener(collections);
  }

  function onCollections(listener) {
    collectionListeners.push(listener);
  }

  function choiceBoxes() {
    return [...$("collection-choices").querySelectorAll("input[type=checkbox]")];
  }

  function renderPicker() {
    const picked = new Set(chosenCollections() || []);
    $("collection-choices").replaceChildren(...collections.map((collection, index) => {
      const id = `collection-choice-${index}`;
      const documents = `${collection.documents} document${collection.documents === 1 ? "" : "s"}`;
      return element("div", { className: "ask-option" },
        element("input", { type: "checkbox", id, value: collection.name, checked: picked.has(collection.name) }),
        element("label", { for: id, text: collection.name }),
        element("span", { className: "hint", text: `(${documents})` }));
    }));
    showChoice();
    $("collection-picker").hidden = collections.length < 2;
  }

  function pickCollection(event) {
    // "All collections" clears the others; with none left ticked, it ticks itself again.
    if (event.target.id === "collection-all") for (const box of choiceBoxes()) box.checked = false;
    chosen = choiceBoxes().filter((box) => box.checked).map((box) => box.value);
    saveChosen();
    showChoice();
  }

  function showChoice() {
    const picked = chosenCollections();
    $("collection-all").checked = !picked;
    $("collection-summary").textContent = picked ? picked.join(", ") : "all";
  }

  // --- Asking -------------------------------------------------------------------------------

  function conversation(turns, question) {
    const messages = [];
    for (const turn of turns) {
      if (!turn.answer || turn.error) continue;
      messages.push({ role: "user", content: turn.question }, { role: "assistant", content: turn.answer });
    }
    messages.push({ role: "user", content: question });
    return messages;
  }

  async function ask(question) {
    question = question.trim();
    if (!question || busy) return;
    if (!current) {
      current = { id: Date.now(), title: question.slice(0, 80), turns: [] };
      threads.unshift(current);
    }
    const body = {
      messages: conversation(current.turns, question),
      stream: true,
      return_related_questions: $("suggest-related").checked,
    };
    const picked = chosenCollections();
    if (picked) body.collections = picked;
    const turn = { question, answer: "", results: [], citations: [], detail: null, related: [], error: null };
    current.turns.push(turn);
    renderThreads();
    let node = FootnoteAnswer.turnElement(turn, true);
    $("turns").append(node);
    const render = (streaming) => {
      const fresh = FootnoteAnswer.turnElement(turn, streaming);
      node.replaceWith(fresh);
      node = fresh;
    };
    setBusy(true);
    try {
      await streamAnswer(body, turn, render);
    } catch (err) {
      turn.error = err.message || String(err);
    } finally {
      setBusy(false);
      render(false);
      saveThreads();
    }
  }

  function setBusy(value) {
    busy = value;
    $("ask-button").disabled = value;
    $("turns").setAttribute("aria-busy", String(value));
  }

  async function streamAnswer(body, turn, render) {
    const response = await api("/v1/chat/completions", {
      method: "POST",
      // A person is waiting: the server admits this answer against the interactive objective.
      headers: { "Content-Type": "application/json", "X-Footnote-Class": "interactive" },
      body: JSON.stringify(body),
    });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    let done = false;
    while (!done) {
      let read;
      try {
        read = await reader.read();
      } catch (err) {
        throw new Error(`the connection was lost while the answer streamed (${err.message})`);
      }
      if (read.done) break;
      buffer += read.value;
      const events = buffer.split("\n\n");
      buffer = events.pop();
      for (const event of events) {
        for (const line of event.split("\n")) {
          if (!line.startsWith("data: ")) continue;
          const data = line.slice(6);
          if (data === "[DONE]") { done = true; break; }
          applyChunk(turn, JSON.parse(data), body.return_related_questions);
        }
      }
      render(!done);
    }
    if (!turn.detail) throw new Error("the answer stream ended before the answer was complete; try again");
  }

  function applyChunk(turn, chunk, suggestRelated) {
    if (chunk.error) throw new ApiError(500, `the answer failed: ${chunk.error.message}`);
    if (chunk.search_results) turn.results = chunk.search_results;
    if (chunk.citations) turn.citations = chunk.citations;
    const choice = (chunk.choices || [])[0];
    if (choice && choice.delta && choice.delta.content) turn.answer += choice.delta.content;
    if (chunk.footnote) turn.detail = chunk.footnote;
    // A server set to suggest after every answer sends them unasked; the reader said no.
    if (suggestRelated && Array.isArray(chunk.related_questions)) turn.related = chunk.related_questions;
  }

  function retry(turn) {
    if (!current || busy) return;
    current.turns = current.turns.filter((t) => t !== turn);
    openThread(current);
    ask(turn.question);
  }

  // --- Wiring -------------------------------------------------------------------------------

  function start() {
    $("ask-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const box = $("question");
      const question = box.value;
      box.value = "";
      ask(question);
    });
    $("question").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        $("ask-form").requestSubmit();
      }
    });
    $("new-thread").addEventListener("click", newThread);
    const suggest = $("suggest-related");
    suggest.checked = loadSuggestRelated();
    suggest.addEventListener("change", () => saveSuggestRelated(suggest.checked));
    $("collection-picker").addEventListener("change", pickCollection);
    window.addEventListener("hashchange", route);
    renderThreads();
    route();
  }

  document.addEventListener("DOMContentLoaded", start);
  return {
    api, ApiError, element, showNotice, clearNotice, registerView, apiKey, setApiKey, ask, retry,
    refreshCollections, onCollections,
  };
})();

Footnote.registerView("ask", Footnote.refreshCollections);
