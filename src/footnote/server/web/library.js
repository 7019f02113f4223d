// The library (upload, list, delete, reindex) and the read-only settings view.
"use strict";

(() => {
  const { api, element, showNotice, clearNotice, registerView, apiKey, setApiKey, refreshCollections, onCollections } =
    Footnote;
  const $ = (id) => document.getElementById(id);
  let settings = null;
  const lastStatus = new Map(); // document id -> what its last upload did
  const queue = [];
  let uploading = false;

  function size(bytes) {
    if (bytes < 1024) return `${bytes} bytes`;
    if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
    return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
  }

  async function loadSettings() {
    const response = await api("/v1/settings");
    settings = await response.json();
    return settings;
  }

  // --- Documents ----------------------------------------------------------------------------

  async function loadDocuments() {
    const shown = $("collection-filter").value;
    const query = shown ? `?collection=${encodeURIComponent(shown)}` : "";
    let documents;
    try {
      documents = (await (await api(`/v1/documents${query}`)).json()).data;
      clearNotice();
    } catch (err) {
      showNotice(`The documents could not be listed: ${err.message}`, err.status === 401);
      return;
    }
    $("document-rows").replaceChildren(...documents.map(documentRow));
    $("documents-empty").hidden = documents.length > 0;
  }

  function documentRow(doc) {
    const when = new Date(doc.ingested_at * 1000).toLocaleString();
    const status = lastStatus.get(doc.id) || (doc.chunk_count > 0 ? "indexed" : "no text found");
    const remove = element("button", {
      type: "button",
      className: "secondary",
      "aria-label": `Delete ${doc.title}`,
      onclick: () => deleteDocument(doc, remove),
      text: "Delete",
    });
    return element("tr", { "data-document-id": doc.id },
      element("td", { className: "doc-title" }, element("span", { text: doc.title }),
        element("div", { className: "hint", text: doc.path })),
      element("td", { className: "doc-collection", text: doc.collection }),
      element("td", { text: doc.format }),
      element("td", { text: String(doc.chunk_count) }),
      element("td", { className: "doc-status", text: status }),
      element("td", { text: when }),
      element("td", {}, remove));
  }

  async function deleteDocument(doc, button) {
    button.disabled = true;
    try {
      await api(`/v1/documents/${doc.id}`, { method: "DELETE" });
      $("reindex-status").textContent = `Deleted ${doc.title}.`;
      lastStatus.delete(doc.id);
      await refreshLibrary();
      $("file-input").focus();
    } catch (err) {
      button.disabled = false;
      $("reindex-status").textContent = `${doc.title} could not be deleted: ${err.message}`;
    }
  }

  async function reindex() {
    const button = $("reindex-button");
    const status = $("reindex-status");
    button.disabled = true;
    status.textContent = "Reindexing…";
    try {
      const report = await (await api("/v1/documents/reindex", { method: "POST" })).json();
      const counts = ["new", "changed", "unchanged", "failed", "deleted"]
        .filter((key) => report.summary[key]).map((key) => `${report.summary[key]} ${key}`);
      status.textContent = `Reindexed: ${counts.join(", ") || "nothing to do"}.`;
      await refreshLibrary();
    } catch (err) {
      status.textContent = `Reindexing failed: ${err.message}`;
    } finally {
      button.disabled = false;
    }
  }

  // The documents, and the collections the page offers to filter by, ask from and upload into.
  async function refreshLibrary() {
    await Promise.all([loadDocuments(), refreshCollections()]);
  }

  function showCollections(collections) {
    $("writable-collections").replaceChildren(...collections.filter((c) => c.writable)
      .map(({ name }) => element("option", { value: name })));
    const filter = $("collection-filter");
    const shown = filter.value;
    filter.replaceChildren(element("option", { value: "", text: "All collections" }),
      ...collections.map(({ name }) => element("option", { value: name, text: name })));
    const stillThere = collections.some(({ name }) => name === shown);
    filter.value = stillThere ? shown : "";
    // Filtering needs two collections; one that is showing stays until its last document goes.
    $("collection-filter-box").hidden = collections.length < 2 && !stillThere;
    if (shown && !stillThere) loadDocuments();
  }

  // --- Uploads ------------------------------------------------------------------------------

  function uploadFiles(files) {
    const collection = $("upload-collection").value.trim() || "default";
    for (const file of files) {
      const progress = element("progress", { max: "100", value: "0", "aria-label": `Upload of ${file.name}` });
      const state = element("span", { className: "upload-state", text: "waiting" });
      const item = element("li", { className: "upload" }, element("span", { className: "upload-name", text: file.name }),
        progress, state);
      $("uploads").prepend(item);
      queue.push({ file, collection, item, progress, state });
    }
    if (!uploading) drain();
  }

  async function drain() {
    uploading = true;
    while (queue.length) await upload(queue.shift());
    uploading = false;
    await refreshLibrary();
  }

  function failed(job, message) {
    job.progress.remove();
    job.state.textContent = "not added";
    job.item.classList.add("failed");
    job.item.append(element("p", { className: "error", role: "alert", text: `${job.file.name} was not added: ${message}` }));
  }

  async function upload(job) {
    if (!settings) {
      try { await loadSettings(); } catch { /* the server checks the size anyway */ }
    }
    const limit = settings ? settings.max_upload_bytes : null;
    if (limit && job.file.size > limit) {
      failed(job, `it is ${size(job.file.size)} and this server accepts files up to ${size(limit)} ` +
        "(raise max_upload_bytes in the server settings to allow larger files)");
      return;
    }
    job.state.textContent = "uploading";
    try {
      const outcome = await send(job);
      lastStatus.set(outcome.id, outcome.status === "unchanged" ? "indexed (unchanged)" : `indexed (${outcome.status})`);
      job.progress.value = 100;
      job.state.textContent = `indexed into ${job.collection}: ${outcome.chunk_count} chunks (${outcome.status})`;
    } catch (err) {
      failed(job, err.message);
    }
  }

  function send(job) {
    return new Promise((resolve, reject) => {
      const request = new XMLHttpRequest();
      request.open("POST", "/v1/documents");
      const key = apiKey();
      if (key) request.setRequestHeader("Authorization", `Bearer ${key}`);
      request.upload.addEventListener("progress", (event) => {
        if (event.lengthComputable) job.progress.value = Math.round((90 * event.loaded) / event.total);
      });
      request.upload.addEventListener("load", () => { job.state.textContent = "indexing"; });
      request.addEventListener("load", () => {
        let body = null;
        try { body = JSON.parse(request.responseText); } catch { /* not JSON */ }
        if (request.status >= 200 && request.status < 300 && body) return resolve(body);
        const message = body && body.error ? body.error.message : `the server answered ${request.status}`;
        if (request.status === 401) showNotice(`${message}. Enter the API key under Settings.`, true);
        reject(new Error(message));
      });
      request.addEventListener("error", () => reject(new Error("the upload was cut off; is the server running?")));
      const form = new FormData();
      form.append("collection", job.collection);
      form.append("file", job.file, job.file.name);
      request.send(form);
    });
  }

  function wireLibrary() {
    const zone = $("drop-zone");
    $("file-input").addEventListener("change", (event) => {
      uploadFiles([...event.target.files]);
      event.target.value = "";
    });
    zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("dragging"); });
    zone.addEventListener("dragleave", () => zone.classList.remove("dragging"));
    zone.addEventListener("drop", (event) => {
      event.preventDefault();
      zone.classList.remove("dragging");
      uploadFiles([...event.dataTransfer.files]);
    });
    $("reindex-button").addEventListener("click", reindex);
    $("collection-filter").addEventListener("change", loadDocuments);
    onCollections(showCollections);
  }

  // --- Settings -----------------------------------------------------------------------------

  const LABELS = [
    ["llm", "Language model"], ["embedder", "Embedding model"], ["models_state", "Models"],
    ["backends.generator", "LLM backend"], ["backends.embedder", "Embedding backend"],
    ["backends.vector_index", "Vector index"], ["top_k", "Sources per answer"],
    ["chunk_tokens", "Chunk size (tokens)"], ["chunk_overlap", "Chunk overlap (tokens)"],
    ["context_tokens", "Context window (tokens)"], ["answer_tokens", "Answer length (tokens)"],
    ["temperature", "Temperature"], ["max_upload_bytes", "Largest upload"], ["max_body_bytes", "Largest request"],
    ["max_concurrency", "Answers at once"], ["request_timeout", "Request timeout (s)"],
    ["auth_required", "API key required"], ["version", "footnote version"],
  ];

  function value(object, path) {
    return path.split(".").reduce((v, key) => (v == null ? v : v[key]), object);
  }

  async function showSettings() {
    $("api-key").value = apiKey();
    try {
      const data = await loadSettings();
      clearNotice();
      $("settings-rows").replaceChildren(...LABELS.map(([path, label]) => {
        let shown = value(data, path);
        if (path.endsWith("_bytes")) shown = size(shown);
        if (typeof shown === "boolean") shown = shown ? "yes" : "no";
        if (shown === null || shown === undefined) shown = "not loaded yet";
        return element("tr", {}, element("th", { scope: "row", text: label }), element("td", { text: String(shown) }));
      }));
    } catch (err) {
      $("settings-rows").replaceChildren(element("tr", {}, element("td", { text: `Not available: ${err.message}` })));
    }
  }

  function wireSettings() {
    $("key-form").addEventListener("submit", (event) => {
      event.preventDefault();
      setApiKey($("api-key").value.trim());
      $("key-status").textContent = "Saved in this browser.";
      showSettings();
      refreshCollections();
    });
    $("forget-key").addEventListener("click", () => {
      setApiKey("");
      $("api-key").value = "";
      $("key-status").textContent = "Forgotten.";
      refreshCollections();
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    wireLibrary();
    wireSettings();
  });
  registerView("library", refreshLibrary);
  registerView("settings", showSettings);
})();
