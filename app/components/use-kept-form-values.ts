"use client";
/**
 * Keeps a form's controlled fields showing what React holds after an action answers. React 19 resets a form whose
 * `action` is a function once the action finishes (`form.reset()`): text inputs come back because React mirrors their
 * value into the `value` attribute, but radio buttons, checkboxes and selects fall back to what they showed when the
 * page was first drawn, while React's state still holds the person's choice. This writes the state back to the DOM
 * after every render (a layout effect runs after that reset), touching only fields that differ.
 */
import { type RefObject, useLayoutEffect } from "react";

export function useKeptFormValues(
  form: RefObject<HTMLFormElement | null>,
  values: Readonly<Record<string, string | boolean>>,
): void {
  useLayoutEffect(() => {
    const element = form.current;
    if (!element) return;
    for (const [name, value] of Object.entries(values)) {
      const field = element.elements.namedItem(name);
      if (field instanceof RadioNodeList) {
        if (field.value !== String(value)) field.value = String(value);
      } else if (field instanceof HTMLInputElement && (field.type === "checkbox" || field.type === "radio")) {
        if (field.checked !== Boolean(value)) field.checked = Boolean(value);
      } else if (
        field instanceof HTMLInputElement ||
        field instanceof HTMLSelectElement ||
        field instanceof HTMLTextAreaElement
      ) {
        if (field.value !== String(value)) field.value = String(value);
      }
    }
  });
}
