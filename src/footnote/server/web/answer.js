// One answer on the page: checked sentences with footnote markers, source cards, the
// tooltip that quotes a footnote's span, and the source view that highlights it.
"use strict";

const FootnoteAnswer = (() => {
  const { api, element } = Footnote;
  const $ = (id) => document.getElementById(id);
  const LINE_ITEM = /^\s*(?:[-*•]|\d+[.)]|#{1,6})\s/;
  const SENTENCE_END = /[.!?\u3002\uff01\uff1f]+$/;
  const MARKER = /\[(\d+)\]/g;

  // --- Rendering an answer ------------------------------------------------------------------

  function sourceInfo(turn, number) {
    const sources = turn.detail ? turn.detail.sources || [] : [];
    const source = sources.find((s) => s.number === number) || null;
    const result = turn.results[number - 1] || {};
    return {
      number,
      title: (source && source.title) || result.title || `Source ${number}`,
      url: turn.citations[number - 1] || result.url || "",
      documentId: source ? source.document_id : null,
      page: source ? source.page : null,
      headingPath: source ? source.heading_path || [] : [],
      start: source ? source.start : null,
      end: source ? source.end : null,
      quote: result.snippet || (source ? source.text : ""),
    };
  }

  function marker(turn, number, citation) {
    const info = sourceInfo(turn, number);
    if (citation) {
      Object.assign(info, { quote: citation.quote, start: citation.start, end: citation.end });
      info.documentId = citation.document_id;
      if (citation.page !== null && citation.page !== undefined) info.page = citation.page;
    }
    const button = element("button", {
      type: "button",
      className: "fn-marker",
      "aria-label": `Footnote ${number}: ${info.title}`,
      text: String(number),
    });
    button.footnote = info;
    return button;
  }

  function streamingText(turn) {
    const paragraph = element("p");
    let last = 0;
    for (const match of turn.answer.matchAll(MARKER)) {
      paragraph.append(turn.answer.slice(last, match.index), marker(turn, Number(match[1]), null));
      last = match.index + match[0].length;
    }
    paragraph.append(turn.answer.slice(last));
    return [paragraph];
  }

  function checkedText(turn) {
    const citations = turn.detail.citations || [];
    const blocks = [];
    let block = null;
    let used = 0;
    for (const sentence of turn.detail.sentences || []) {
      const own = citations.slice(used, used + sentence.citations.length);
      used += sentence.citations.length;
      if (!block || LINE_ITEM.test(sentence.text)) {
        block = element("p");
        blocks.push(block);
      } else {
        block.append(" ");
      }
      block.append(sentenceElement(turn, sentence, own));
    }
    return blocks;
  }

  // The server never shows a sentence no source supports: those are in `unsupported_sentences`.
  function sentenceElement(turn, sentence, citations) {
    const span = element("span", { className: "sentence" });
    const text = sentence.text;
    if (!sentence.supported || !citations.length) {
      span.append(text);
      return span;
    }
    const end = SENTENCE_END.exec(text);
    const cut = end ? end.index : text.length;
    span.append(text.slice(0, cut));
    const seen = new Set();
    for (const citation of citations) {
      if (seen.has(citation.number)) continue;
      seen.add(citation.number);
      span.append(marker(turn, citation.number, citation));
    }
    span.append(text.slice(cut));
    return span;
  }

  function sourceCards(turn) {
    const numbers = turn.results.map((_, index) => index + 1);
    const cards = numbers.map((number) => {
      const info = sourceInfo(turn, number);
      const meta = [info.headingPath.join(" › "), info.page ? `page ${info.page}` : ""].filter(Boolean);
      const content = [
        element("span", { className: "card-title", text: `${number}. ${info.title}` }),
        meta.length ? element("span", { className: "card-meta", text: meta.join(" · ") }) : null,
        element("span", { className: "card-snippet", text: info.quote.replace(/^#{1,6}\s+/gm, "") }),
      ];
      const button = element("button", {
        type: "button",
        disabled: !turn.detail,
        onclick: (event) => openSource(info, event.currentTarget),
      }, content);
      return element("li", { className: "source-card" }, button);
    });
    return cards.length ? element("ul", { className: "source-cards", "aria-label": "Sources" }, cards) : null;
  }

  function answerMarkdown(turn) {
    const numbers = [...new Set((turn.detail ? turn.detail.citations : []).map((c) => c.number))].sort((a, b) => a - b);
    const notes = numbers.map((n) => {
      const info = sourceInfo(turn, n);
      return `[${n}]: ${info.url} "${info.title.replace(/"/g, "'")}"`;
    });
    return notes.length ? `${turn.answer}\n\n${notes.join("\n")}\n` : `${turn.answer}\n`;
  }

  async function copyAnswer(turn, status) {
    const text = answerMarkdown(turn);
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      const area = element("textarea", { "aria-hidden": "true" });
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    status.textContent = "Copied the answer with its footnotes as Markdown.";
  }

  function turnElement(turn, streaming = false) {
    const item = element("li", { className: "turn" }, element("h2", { className: "question", text: turn.question }));
    const answer = element("div", { className: "answer" });
    // An answer with no checked sentence (the documents lack it) is shown as its text.
    const checked = turn.detail && (turn.detail.sentences || []).length;
    answer.append(...(checked ? checkedText(turn) : streamingText(turn)));
    item.append(answer);
    if (streaming) {
      const waiting = turn.answer ? "Writing and checking the answer…" : "Searching your documents…";
      item.append(element("p", { className: "status-line", role: "status" },
        element("span", { className: "spinner", "aria-hidden": "true" }), waiting));
    }
    if (turn.error) {
      item.append(element("div", { className: "error answer-error", role: "alert" },
        element("strong", { text: "The answer could not be completed. " }), turn.error, " ",
        element("button", { type: "button", className: "secondary", onclick: () => Footnote.retry(turn), text: "Ask again" })));
    }
    if (turn.detail) {
      const status = element("span", { role: "status" });
      const leftOut = (turn.detail.unsupported_sentences || []).length;
      item.append(element("div", { className: "answer-tools" },
        element("button", { type: "button", className: "secondary", onclick: () => copyAnswer(turn, status), text: "Copy as Markdown" }),
        leftOut ? element("span", { className: "hint left-out", text: `${leftOut} sentence${leftOut > 1 ? "s" : ""} left out: no source supports ${leftOut > 1 ? "them" : "it"}` }) : null,
        status));
    }
    const cards = sourceCards(turn);
    if (cards) item.append(element("h3", { className: "visually-hidden", text: "Sources" }), cards);
    if (turn.related && turn.related.length) {
      item.append(element("div", { className: "related" }, element("h3", { text: "Related" }),
        element("ul", {}, turn.related.map((q) => element("li", {},
          element("button", { type: "button", onclick: () => Footnote.ask(q), text: q }))))));
    }
    return item;
  }

  // --- Tooltip and source view --------------------------------------------------------------

  let tipFor = null;

  function showTip(button) {
    const info = button.footnote;
    if (!info) return;
    const tip = $("tooltip");
    const where = [info.title, info.page ? `page ${info.page}` : "", info.headingPath.join(" › ")].filter(Boolean);
    tip.replaceChildren(
      element("blockquote", { className: "tip-quote", text: info.quote }),
      element("div", { className: "tip-source", text: where.join(" · ") }),
      element("div", { className: "hint", text: info.documentId ? "Click or press Enter to open the source." : "" }),
    );
    tip.hidden = false;
    const box = button.getBoundingClientRect();
    const left = Math.max(8, Math.min(window.scrollX + box.left, window.scrollX + window.innerWidth - tip.offsetWidth - 8));
    tip.style.left = `${left}px`;
    tip.style.top = `${window.scrollY + box.bottom + 6}px`;
    button.setAttribute("aria-describedby", "tooltip");
    tipFor = button;
  }

  function hideTip() {
    if (tipFor) tipFor.removeAttribute("aria-describedby");
    tipFor = null;
    $("tooltip").hidden = true;
  }

  let sourceOpener = null;

  async function openSource(info, opener) {
    hideTip();
    const panel = $("source-view");
    sourceOpener = opener || null;
    $("source-title").textContent = info.title;
    const meta = [["Source", `[${info.number}]`], ["Page", info.page || ""],
      ["Section", info.headingPath.join(" › ")], ["Location", info.url]];
    $("source-meta").replaceChildren(...meta.filter(([, v]) => v).flatMap(([k, v]) =>
      [element("dt", { text: k }), element("dd", { text: String(v) })]));
    const textBox = $("source-text");
    textBox.replaceChildren(element("p", { className: "hint", text: "Loading the document…" }));
    panel.hidden = false;
    panel.focus();
    try {
      if (!info.documentId) throw new Error("this source is not in the library any more");
      // Fetched each time: a re-uploaded file keeps its id but may have new text.
      const response = await api(`/v1/documents/${info.documentId}/text`);
      const text = (await response.json()).text;
      const start = Math.max(0, info.start ?? 0);
      const end = Math.min(text.length, info.end ?? start);
      const mark = element("mark", { id: "source-mark", text: text.slice(start, end) });
      textBox.replaceChildren(text.slice(0, start), mark, text.slice(end));
      mark.scrollIntoView({ block: "center" });
    } catch (err) {
      textBox.replaceChildren(element("p", { className: "error", role: "alert", text: `The source could not be shown: ${err.message}` }));
    }
  }

  function closeSource() {
    const panel = $("source-view");
    if (panel.hidden) return;
    panel.hidden = true;
    if (sourceOpener && document.contains(sourceOpener)) sourceOpener.focus();
    sourceOpener = null;
  }

  function wire() {
    const turns = $("turns");
    turns.addEventListener("mouseover", (e) => { const b = e.target.closest(".fn-marker"); if (b) showTip(b); });
    turns.addEventListener("mouseout", (e) => { if (e.target.closest(".fn-marker")) hideTip(); });
    turns.addEventListener("focusin", (e) => { const b = e.target.closest(".fn-marker"); if (b) showTip(b); });
    turns.addEventListener("focusout", (e) => { if (e.target.closest(".fn-marker")) hideTip(); });
    turns.addEventListener("click", (e) => {
      const b = e.target.closest(".fn-marker");
      if (b && b.footnote && b.footnote.documentId) openSource(b.footnote, b);
      else if (b) showTip(b);
    });
    $("close-source").addEventListener("click", closeSource);
    document.addEventListener("keydown", (event) => {
      if (event.key !== "Escape") return;
      if (tipFor) hideTip();
      else closeSource();
    });
  }

  document.addEventListener("DOMContentLoaded", wire);
  return { turnElement, closeSource };
})();
