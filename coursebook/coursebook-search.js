/* TileLang 算子课: Chinese search, loaded on search.html only.
 *
 * 1. Query segmentation.  Sphinx's zh indexer cuts every page into words with jieba
 *    (plus the course's term dictionary), but the search page splits a query only at
 *    spaces and punctuation, so "算术强度" is looked up as one word while the index
 *    holds whatever jieba made of it.  Here a Chinese run of the query is cut against
 *    the index's own term list: greedy longest match, where a piece counts if it is an
 *    index term, or (three characters or more) part of one -- Sphinx then finds it by
 *    its partial-match rule.  Characters that start no term are dropped when single
 *    (的, 是) and kept as one word when longer (a word the book does not contain must
 *    find nothing).
 *
 * 2. Snippets.  Sphinx fetches each result page to quote it; from file:// the fetch
 *    fails, and over HTTP it quotes the page's [role=main], which begins with the
 *    table of contents.  The build writes every page's article text, with its
 *    sections, to coursebook-search-text.js; the fetch of a book page is answered
 *    from it, online and offline alike.  The snippet starts shortly before the first
 *    hit (Sphinx starts 120 characters before it: a whole paragraph of Chinese).
 *
 * Loaded deferred, so searchtools.js (and its `Search`) is already defined.
 */
(function () {
  "use strict";

  var CJK = /[\u3400-\u9fff\uf900-\ufaff]/;
  var RUNS = /[\u3400-\u9fff\uf900-\ufaff]+|[^\u3400-\u9fff\uf900-\ufaff]+/g;
  var DEFAULT_SPLIT = /[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/u;

  var lexicon = null; // {terms: Set, parts: Set, longest: number}

  function buildLexicon() {
    if (lexicon) return lexicon;
    if (typeof Search === "undefined" || !Search._index) return null;
    var terms = new Set();
    var parts = new Set();
    var longest = 2;
    [Search._index.terms || {}, Search._index.titleterms || {}].forEach(function (table) {
      Object.keys(table).forEach(function (term) {
        if (!CJK.test(term)) return;
        terms.add(term);
        longest = Math.max(longest, term.length);
        for (var i = 0; i < term.length; i++) {
          for (var j = i + 3; j <= term.length; j++) parts.add(term.slice(i, j));
        }
      });
    });
    lexicon = { terms: terms, parts: parts, longest: longest };
    return lexicon;
  }

  /** Cut one run of Chinese characters into index words. */
  function segment(run, lex) {
    var words = [];
    var unknown = "";
    var flush = function () {
      if (unknown.length > 1) words.push(unknown);
      unknown = "";
    };
    var i = 0;
    while (i < run.length) {
      var end = 0;
      for (var j = Math.min(run.length, i + lex.longest); j >= i + 2; j--) {
        var piece = run.slice(i, j);
        if (lex.terms.has(piece) || (piece.length > 2 && lex.parts.has(piece))) {
          end = j;
          break;
        }
      }
      if (end) {
        flush();
        words.push(run.slice(i, end));
        i = end;
      } else {
        unknown += run[i];
        i += 1;
      }
    }
    flush();
    return words;
  }

  function splitChineseQuery(query) {
    var lex = buildLexicon();
    var words = [];
    query.split(DEFAULT_SPLIT).forEach(function (token) {
      if (!token) return;
      (token.match(RUNS) || []).forEach(function (run) {
        if (CJK.test(run) && lex) words.push.apply(words, segment(run, lex));
        else words.push(run);
      });
    });
    return words;
  }

  window.splitQuery = splitChineseQuery;
  window.coursebookSplitQuery = splitChineseQuery; // for tests and the console

  // ---------------------------------------------------------------- snippets
  var pages = window.COURSEBOOK_SEARCH_TEXT || {};
  var realFetch = window.fetch ? window.fetch.bind(window) : null;

  function bookPage(url) {
    var root = document.documentElement.dataset.content_root || "./";
    var base = new URL(root, document.baseURI).href;
    var href = new URL(String(url), document.baseURI).href.split("#")[0].split("?")[0];
    if (href.indexOf(base) !== 0) return null;
    var rel = href.slice(base.length).replace(/\.html$/, "");
    return Object.prototype.hasOwnProperty.call(pages, rel) ? rel : null;
  }

  window.fetch = function (input, init) {
    var url = typeof input === "string" ? input : (input && input.url) || String(input);
    var page = bookPage(url);
    if (page !== null) {
      return Promise.resolve(
        new Response(pages[page], { headers: { "Content-Type": "text/html; charset=utf-8" } })
      );
    }
    if (!realFetch) return Promise.reject(new TypeError("fetch unavailable"));
    return realFetch(input, init);
  };

  var BEFORE = 30;
  var LENGTH = 160;
  if (typeof Search !== "undefined") {
    Search.makeSearchSummary = function (htmlText, keywords, anchor) {
      var text = Search.htmlToText(htmlText, anchor).trim();
      if (!text) return null;
      var lower = text.toLowerCase();
      var hits = Array.from(keywords)
        .map(function (k) { return lower.indexOf(String(k).toLowerCase()); })
        .filter(function (i) { return i > -1; });
      var at = hits.length ? Math.min.apply(null, hits) : 0;
      var start = Math.max(at - BEFORE, 0);
      var summary = document.createElement("p");
      summary.classList.add("context");
      summary.textContent =
        (start > 0 ? "…" : "") + text.substr(start, LENGTH).trim() +
        (start + LENGTH < text.length ? "…" : "");
      return summary;
    };
  }
})();
