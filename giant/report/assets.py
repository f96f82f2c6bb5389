"""The page's style and its one script, inline so report.html opens from a file, a copied folder or
MLflow's artifact view with no request for anything else.

The script only reads the table the page already holds: rows carry their filter values in data-*
attributes and each cell its sort value in data-v, so no model text ever passes through JavaScript.
"""

CSS = """
body{font-family:system-ui,sans-serif;max-width:1300px;margin:1.5em auto;padding:0 1em;color:#222}
h1{font-size:1.35em}h2{font-size:1.12em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.8em}
h3{font-size:1em;margin-top:1.2em}
table{border-collapse:collapse;margin:.4em 0}
th,td{padding:.2em .6em;border-bottom:1px solid #eee;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
th[data-sort]{cursor:pointer;user-select:none;background:#f3f3f3}th[data-sort]:hover{background:#e4e4e4}
th.asc::after{content:" \\25B2"}th.desc::after{content:" \\25BC"}
.filters label{margin-right:1em}.muted{color:#666}.flag{background:#fff3cd;border:1px solid #e0b100;
padding:.5em .8em;border-radius:4px}.yes{color:#1b7f3b;font-weight:bold}.no{color:#b00020;font-weight:bold}
.diag{background:#dcefdc}.fail{background:#f8e0e0}td.text{max-width:38em;overflow-wrap:anywhere}
details{margin:.5em 0}#items td:first-child{white-space:nowrap}
"""

SCRIPT = """
(function () {
  const table = document.getElementById("items");
  const body = table.tBodies[0];
  const filters = Array.from(document.querySelectorAll("select[data-filter]"));
  const shown = document.getElementById("shown");
  function apply() {
    let count = 0;
    for (const row of body.rows) {
      const keep = filters.every((f) => f.value === "" || row.dataset[f.dataset.filter] === f.value);
      row.hidden = !keep;
      if (keep) count += 1;
    }
    shown.textContent = String(count);
  }
  filters.forEach((f) => f.addEventListener("change", apply));
  const heads = Array.from(table.tHead.rows[0].cells);
  heads.forEach((head, column) => {
    if (!head.dataset.sort) return;
    head.addEventListener("click", () => {
      const up = !head.classList.contains("asc");
      heads.forEach((h) => h.classList.remove("asc", "desc"));
      head.classList.add(up ? "asc" : "desc");
      const numeric = head.dataset.sort === "num";
      const value = (row) => row.cells[column].dataset.v;
      const rows = Array.from(body.rows);
      rows.sort((a, b) => {
        let x = value(a), y = value(b);
        if (numeric) {
          x = x === "" ? Infinity : Number(x);
          y = y === "" ? Infinity : Number(y);
          if (x === y) return 0;
          return up ? x - y : y - x;
        }
        return up ? x.localeCompare(y) : y.localeCompare(x);
      });
      rows.forEach((row) => body.appendChild(row));
    });
  });
  apply();
})();
"""
