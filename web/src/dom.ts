// Small DOM helpers the app's pages share.
import { ApiError } from './api';
import { esc } from './units';

export const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

/** An error as one line for the page: the server's message with its code and status where it sent one. */
export function message(e: unknown): string {
  if (e instanceof ApiError) return `${e.message} (${e.code}, HTTP ${e.status})`;
  return e instanceof Error ? e.message : String(e);
}

/** Fills a <select> with [value, label] pairs and selects `selected`, or the first where it is absent. */
export function fillSelect(id: string, items: Array<[string, string]>, selected: string): void {
  const el = $(id) as HTMLSelectElement;
  el.innerHTML = items.map(([v, label]) => `<option value="${esc(v)}">${esc(label)}</option>`).join('');
  el.value = items.some(([v]) => v === selected) ? selected : items[0]?.[0] ?? '';
}

/** Sets a form's status line (an element with class "status"). */
export function setStatus(id: string, text: string, kind: 'busy' | 'ok' | 'error' = 'ok'): void {
  const s = $(id);
  s.textContent = text;
  s.className = `status ${kind}`;
}
