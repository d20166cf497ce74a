import { describe, expect, test } from "vitest";
import { render, screen } from "@testing-library/react";
import { DiffView, splitDiff } from "./DiffView";

const diff = `diff --git a/app.py b/app.py
index 1111111..2222222 100644
--- a/app.py
+++ b/app.py
@@ -1,2 +1,2 @@
-def old():
+def new():
     return 1
diff --git a/notes.md b/notes.md
new file mode 100644
--- /dev/null
+++ b/notes.md
@@ -0,0 +1 @@
+# hi
`;

describe("splitDiff", () => {
  test("one section per file, named by its new path", () => {
    const files = splitDiff(diff);
    expect(files.map((f) => f.name)).toEqual(["app.py", "notes.md"]);
    expect(files[0]?.lines).toEqual(["@@ -1,2 +1,2 @@", "-def old():", "+def new():", "     return 1"]);
  });

  test("a plain diff without git headers", () => {
    const files = splitDiff("--- a.txt\n+++ a.txt\n@@ -1 +1 @@\n-x\n+y\n");
    expect(files.map((f) => f.name)).toEqual(["a.txt"]);
  });

  test("a removed line that looks like a header stays a line", () => {
    const files = splitDiff("--- a.sql\n+++ a.sql\n@@ -1,2 +1 @@\n--- a comment\n x\n");
    expect(files.length).toBe(1);
    expect(files[0]?.lines).toContain("--- a comment");
  });
});

describe("DiffView", () => {
  test("renders additions, deletions and syntax colour, escaping the code", () => {
    const { container } = render(<DiffView diff={diff + "+<script>alert(1)</script>\n"} />);
    expect(screen.getByText("app.py")).toBeTruthy();
    expect(container.querySelectorAll(".diff-add").length).toBe(3);
    expect(container.querySelectorAll(".diff-del").length).toBe(1);
    expect(container.querySelector(".diff-add .hljs-keyword")?.textContent).toBe("def");
    expect(container.querySelector("script")).toBeNull();
  });

  test("an empty diff says so", () => {
    render(<DiffView diff="" />);
    expect(screen.getByText("No changes.")).toBeTruthy();
  });
});
