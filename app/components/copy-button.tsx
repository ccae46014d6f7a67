"use client";
/**
 * A button that copies `value` to the clipboard and says so ("Copied" for 2 s, announced to screen readers). Where
 * the Clipboard API is refused (an insecure origin, a denied permission) it selects the text of `selectId` instead,
 * so a keyboard user can press Ctrl-C, and says that.
 */
import { useEffect, useState } from "react";

type Outcome = "idle" | "copied" | "select";

export function CopyButton({
  value,
  label,
  selectId,
  compact = false,
}: {
  value: string;
  /** What is copied, for the button's accessible name ("Copy token", "Copy charge id ch_..."). */
  label: string;
  /** The id of the element showing the value, selected when copying is refused. */
  selectId?: string;
  /** Icon-sized button for table cells. */
  compact?: boolean;
}) {
  const [outcome, setOutcome] = useState<Outcome>("idle");
  useEffect(() => {
    if (outcome === "idle") return;
    const timer = setTimeout(() => setOutcome("idle"), 2000);
    return () => clearTimeout(timer);
  }, [outcome]);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setOutcome("copied");
    } catch {
      const element = selectId ? document.getElementById(selectId) : null;
      if (element) {
        const range = document.createRange();
        range.selectNodeContents(element);
        const selection = window.getSelection();
        selection?.removeAllRanges();
        selection?.addRange(range);
      }
      setOutcome("select");
    }
  };
  const text = outcome === "copied" ? "Copied" : outcome === "select" ? "Press Ctrl+C" : "Copy";
  return (
    <button
      type="button"
      className={compact ? "copy compact" : "copy"}
      onClick={copy}
      aria-label={outcome === "idle" ? label : undefined}
      data-copied={outcome === "copied"}
    >
      <span aria-live="polite">{text}</span>
    </button>
  );
}
