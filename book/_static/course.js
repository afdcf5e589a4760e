// Tables of four or more columns stack on a narrow screen (course.css): each row
// becomes a block of "header: value" lines, so no table needs to scroll sideways.
document.addEventListener("DOMContentLoaded", () => {
  for (const table of document.querySelectorAll("article.bd-article table")) {
    const heads = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
    if (heads.length < 4) continue;
    table.classList.add("course-stacks");
    for (const row of table.querySelectorAll("tbody tr")) {
      [...row.children].forEach((cell, i) => {
        cell.dataset.label = heads[i] || "";
        const value = document.createElement("span");  // one grid item beside the label
        value.className = "course-value";
        value.append(...cell.childNodes);
        cell.append(value);
      });
    }
  }
});
