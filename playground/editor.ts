// The script editor: CodeMirror 6 with JavaScript highlighting, line numbers,
// completion of what a script sees (globals.ts), and a mark on the line an
// error names. Bundled into the playground's one script file at build time.
import { autocompletion, closeBrackets, closeBracketsKeymap, completionKeymap } from '@codemirror/autocomplete';
import type { CompletionContext, CompletionResult } from '@codemirror/autocomplete';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { completionPath, javascript, javascriptLanguage } from '@codemirror/lang-javascript';
import { bracketMatching, defaultHighlightStyle, indentOnInput, syntaxHighlighting } from '@codemirror/language';
import { lintGutter, setDiagnostics } from '@codemirror/lint';
import { EditorState, RangeSetBuilder, StateEffect, StateField } from '@codemirror/state';
import {
  Decoration,
  EditorView,
  drawSelection,
  highlightActiveLine,
  highlightActiveLineGutter,
  keymap,
  lineNumbers,
  type DecorationSet,
} from '@codemirror/view';
import { MEMBERS, SCRIPT_GLOBALS } from './globals.js';
import type { ErrorLocation } from './result.js';

/** Completes the script's globals and the members of page, page.keyboard, cheerio, console. */
function scriptCompletions(context: CompletionContext): CompletionResult | null {
  const at = completionPath(context);
  if (at === null) return null;
  const options = at.path.length === 0 ? SCRIPT_GLOBALS : MEMBERS[at.path.join('.')];
  if (options === undefined) return null;
  return {
    from: context.pos - at.name.length,
    options: options.map((o) => ({ label: o.label, type: o.type, ...(o.detail ? { detail: o.detail } : {}) })),
    validFor: /^[\w$]*$/,
  };
}

const markLine = StateEffect.define<number | null>();
const errorLineClass = Decoration.line({ class: 'pg-error-line' });

/** The line an error named, as a line decoration; kept through edits until the next run. */
const errorLine = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(marks, tr) {
    for (const e of tr.effects) {
      if (!e.is(markLine)) continue;
      if (e.value === null || e.value > tr.state.doc.lines) return Decoration.none;
      const b = new RangeSetBuilder<Decoration>();
      const line = tr.state.doc.line(e.value);
      b.add(line.from, line.from, errorLineClass);
      return b.finish();
    }
    return marks.map(tr.changes);
  },
  provide: (f) => EditorView.decorations.from(f),
});

export interface ScriptEditor {
  readonly view: EditorView;
  getScript(): string;
  setScript(text: string): void;
  /** Marks the line (and underlines from the column) with the error's message; undefined clears. */
  markError(where: ErrorLocation | undefined, message?: string): void;
  /** Puts the cursor on a line and focuses the editor. */
  goToLine(line: number): void;
}

export function createEditor(opts: {
  parent: HTMLElement;
  doc: string;
  labelledBy: string;
  describedBy: string;
  /** The page's CSP nonce, for the <style> element CodeMirror adds. */
  nonce: string | undefined;
  onChange(): void;
}): ScriptEditor {
  const view = new EditorView({
    parent: opts.parent,
    state: EditorState.create({
      doc: opts.doc,
      extensions: [
        lineNumbers(),
        highlightActiveLineGutter(),
        history(),
        drawSelection(),
        indentOnInput(),
        bracketMatching(),
        closeBrackets(),
        highlightActiveLine(),
        EditorView.lineWrapping,
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        javascript(),
        javascriptLanguage.data.of({ autocomplete: scriptCompletions }),
        autocompletion(),
        lintGutter(),
        errorLine,
        // Tab is left to the browser, so keyboard users can leave the editor (Mod-] and Mod-[ indent).
        keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, ...completionKeymap]),
        EditorView.contentAttributes.of({
          'aria-labelledby': opts.labelledBy,
          'aria-describedby': opts.describedBy,
          'aria-multiline': 'true',
        }),
        ...(opts.nonce ? [EditorView.cspNonce.of(opts.nonce)] : []),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) opts.onChange();
        }),
      ],
    }),
  });

  function markError(where: ErrorLocation | undefined, message = ''): void {
    if (where === undefined || where.line > view.state.doc.lines) {
      view.dispatch(setDiagnostics(view.state, []), { effects: markLine.of(null) });
      return;
    }
    const line = view.state.doc.line(where.line);
    const from = Math.min(line.to, line.from + Math.max(0, (where.column ?? 1) - 1));
    const to = from < line.to ? line.to : Math.min(view.state.doc.length, from + 1);
    view.dispatch(setDiagnostics(view.state, [{ from, to, severity: 'error', message }]), {
      effects: [markLine.of(where.line), EditorView.scrollIntoView(line.from, { y: 'center' })],
    });
  }

  return {
    view,
    getScript: () => view.state.doc.toString(),
    setScript(text) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    },
    markError,
    goToLine(n) {
      const line = view.state.doc.line(Math.min(Math.max(1, n), view.state.doc.lines));
      view.dispatch({ selection: { anchor: line.from }, scrollIntoView: true });
      view.focus();
    },
  };
}
