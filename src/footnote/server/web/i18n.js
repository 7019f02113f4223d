// The page's own words in simplified Chinese when the browser asks for Chinese first.
// Only the page's interface is translated: questions, answers, quotes, titles and file names
// stay as they are. Every text node and label attribute whose English is listed is replaced,
// now and whenever the page adds more.
"use strict";

(() => {
  const wanted = (navigator.languages && navigator.languages[0]) || navigator.language || "en";
  if (!/^zh(\b|-|_)/i.test(wanted)) return;

  const WORDS = {
    "Skip to the question box": "跳到提问框",
    "Main": "主导航",
    "Ask": "提问",
    "Library": "文档库",
    "Settings": "设置",
    "Threads": "对话",
    "New thread": "新对话",
    "Ask your documents": "向你的文档提问",
    "Ask a question about your documents": "就你的文档提一个问题",
    "e.g. Who invented the Fresnel lens?": "例如：菲涅耳透镜是谁发明的？",
    "Enter sends; Shift+Enter adds a line.": "按 Enter 发送，Shift+Enter 换行。",
    "Suggest follow-up questions": "推荐追问",
    "(each answer then takes a few seconds longer)": "（每个回答会多花几秒钟）",
    "Collections:": "集合：",
    "all": "全部",
    "Answer from these collections": "从这些集合中回答",
    "All collections": "全部集合",
    "Upload into collection": "上传到集合",
    "Upload documents (Markdown, text, HTML, PDF, DOCX): choose files or drop them here":
      "上传文档（Markdown、文本、HTML、PDF、DOCX）：选择文件或拖放到这里",
    "Uploads": "上传",
    "Reindex all": "全部重新索引",
    "Show collection": "显示集合",
    "Documents": "文档",
    "Title": "标题",
    "Collection": "集合",
    "Format": "格式",
    "Chunks": "分块",
    "Status": "状态",
    "Indexed": "索引时间",
    "Actions": "操作",
    "No documents yet: upload some above.": "还没有文档：请在上方上传。",
    "API key": "API 密钥",
    "Save key": "保存密钥",
    "Forget key": "忘记密钥",
    "Models and limits are read-only here: change them in the settings file or the":
      "模型和限制在这里只读：请在设置文件或",
    "environment (": "环境变量（",
    ") and restart": "）中修改，然后重启",
    "Active models, backends and limits": "当前的模型、后端和限制",
    "Source": "出处",
    "Close": "关闭",
    "Close the source view": "关闭出处视图",
    "Document text": "文档正文",
    "Sources": "出处",
    "Related": "相关问题",
    "Ask again": "重新提问",
    "Copy as Markdown": "复制为 Markdown",
    "Copied the answer with its footnotes as Markdown.": "已将回答及其脚注复制为 Markdown。",
    "Delete": "删除",
    "Searching your documents…": "正在检索你的文档…",
    "Writing and checking the answer…": "正在撰写并核对回答…",
    "The answer could not be completed.": "回答未能完成。",
    "No source passage supports this sentence": "没有出处段落支持这句话",
    "Click or press Enter to open the source.": "点击或按 Enter 打开出处。",
    "Loading the document…": "正在加载文档…",
    "Open Settings": "打开设置",
    "Saved in this browser.": "已保存在此浏览器中。",
    "Forgotten.": "已忘记。",
    "Reindexing…": "正在重新索引…",
    "waiting": "等待中",
    "uploading": "上传中",
    "indexing": "索引中",
    "not added": "未添加",
    "indexed": "已索引",
    "indexed (unchanged)": "已索引（未变）",
    "indexed (new)": "已索引（新）",
    "indexed (changed)": "已索引（已更新）",
    "no text found": "未找到文字",
    "Models": "模型",
    "Language model": "语言模型",
    "Embedding model": "嵌入模型",
    "Embedding backend": "嵌入后端",
    "Vector index": "向量索引",
    "Sources per answer": "每个回答的出处数",
    "Answer length (tokens)": "回答长度（词元）",
    "Answers at once": "同时回答数",
    "Context window (tokens)": "上下文窗口（词元）",
    "Chunk size (tokens)": "分块大小（词元）",
    "Chunk overlap (tokens)": "分块重叠（词元）",
    "Temperature": "温度",
    "Request timeout (s)": "请求超时（秒）",
    "Largest request": "最大请求",
    "Largest upload": "最大上传",
    "Page": "页",
    "Section": "章节",
    "Location": "位置",
  };
  // Words that carry a name or a number: the English pattern and its Chinese form.
  const PATTERNS = [
    [/^Footnote (\d+): (.*)$/, "脚注 $1：$2"],
    [/^Source (\d+)$/, "出处 $1"],
    [/^Delete (.+)$/, "删除 $1"],
    [/^Deleted (.+)\.$/, "已删除 $1。"],
    [/^Upload of (.+)$/, "上传 $1"],
    [/^(\d+) sentences? left out: no source supports (?:it|them)$/, "$1 句因没有出处支持而略去"],
    [/^Reindexed: (.*)\.$/, "已重新索引：$1。"],
    [/^indexed into (.+?): (\d+) chunks \((\w+)\)$/, "已索引到 $1：$2 个分块（$3）"],
    [/^The documents could not be listed: (.*)$/, "无法列出文档：$1"],
    [/^The source could not be shown: (.*)$/, "无法显示出处：$1"],
    [/^Reindexing failed: (.*)$/, "重新索引失败：$1"],
    [/^Not available: (.*)$/, "不可用：$1"],
  ];
  // What users wrote or documents hold is never translated.
  const UNTOUCHED = ".question, .answer, .card-title, .card-snippet, .tip-quote, .tip-source, "
    + "#source-text, #source-meta dd, #thread-list, .doc-title, .doc-collection, .upload-name, "
    + "#collection-choices, #collection-filter, #writable-collections, #settings-rows td:last-child, code";
  const ATTRIBUTES = ["placeholder", "aria-label", "title"];

  function translated(text) {
    const core = text.trim();
    if (!core) return null;
    let chinese = WORDS[core];
    if (chinese === undefined) {
      for (const [pattern, form] of PATTERNS) {
        if (pattern.test(core)) { chinese = core.replace(pattern, form); break; }
      }
    }
    return chinese === undefined ? null : text.replace(core, chinese);
  }

  function untouched(node) {
    const owner = node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement;
    return !owner || Boolean(owner.closest(UNTOUCHED));
  }

  function translate(root) {
    if (root.nodeType === Node.TEXT_NODE) {
      if (!untouched(root)) {
        const chinese = translated(root.nodeValue);
        if (chinese !== null) root.nodeValue = chinese;
      }
      return;
    }
    if (root.nodeType !== Node.ELEMENT_NODE || untouched(root)) return;
    for (const name of ATTRIBUTES) {
      const value = root.getAttribute(name);
      const chinese = value === null ? null : translated(value);
      if (chinese !== null) root.setAttribute(name, chinese);
    }
    for (const child of root.childNodes) translate(child);
  }

  function start() {
    document.documentElement.lang = "zh-CN";
    translate(document.body);
    new MutationObserver((changes) => {
      for (const change of changes) {
        if (change.type === "childList") change.addedNodes.forEach(translate);
        else translate(change.target);
      }
    }).observe(document.body, {
      childList: true, subtree: true, characterData: true, attributes: true, attributeFilter: ATTRIBUTES,
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
