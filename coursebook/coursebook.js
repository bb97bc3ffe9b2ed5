/* TileLang 算子课: small fixes to the book theme, loaded deferred in <head>.
 *
 * Sidebar toggles.  pydata-sphinx-theme >= 0.17 renders a second pair of
 * `.primary-toggle` / `.secondary-toggle` buttons in its top navbar, which
 * sphinx-book-theme always hides (`.bd-header button.sidebar-toggle {display:none}`).
 * Both themes bind their click handlers with `document.querySelector(".primary-toggle")`,
 * which finds that hidden copy first, so the visible ☰ and table-of-contents buttons do
 * nothing (pydata-sphinx-theme #2451, sphinx-book-theme #988).  This script runs after
 * the page is parsed and before the theme's deferred script (end of <body>) binds its
 * handlers: it removes the never-displayed copies, so the themes bind the visible
 * buttons -- the dialog on phones and tablets, collapsing the sidebar on desktops.
 */
(function () {
  "use strict";

  function dropHiddenToggles() {
    document
      .querySelectorAll(".bd-header .primary-toggle, .bd-header .secondary-toggle")
      .forEach(function (button) {
        // Only the copies the stylesheet never shows; a visible one stays.
        if (getComputedStyle(button).display === "none") button.remove();
      });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", dropHiddenToggles);
  } else {
    dropHiddenToggles();
  }
})();
