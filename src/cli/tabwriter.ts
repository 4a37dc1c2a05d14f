/**
 * Go's text/tabwriter, as kubectl prints through it: cells end at a tab, a column's width is set by
 * the block of consecutive lines that have a cell in it, and a line's last cell is not padded.
 */
export interface TabwriterOptions {
  minWidth: number;
  padding: number;
}

/** kubectl's table printer (printers.GetNewTabWriter). */
export const TABLE: TabwriterOptions = { minWidth: 6, padding: 3 };
/** kubectl describe's writer. */
export const DESCRIBE: TabwriterOptions = { minWidth: 0, padding: 2 };

export function tabwrite(text: string, opts: TabwriterOptions): string {
  const hasNewline = text.endsWith('\n');
  const lines = (hasNewline ? text.slice(0, -1) : text).split('\n').map((l) => l.split('\t'));
  const out: string[] = [];
  const widths: number[] = [];
  const width = (s: string) => [...s].length;
  const writeLines = (line0: number, line1: number) => {
    for (let i = line0; i < line1; i++) {
      const cells = lines[i]!;
      let s = '';
      cells.forEach((c, j) => {
        s += c;
        if (j < widths.length) s += ' '.repeat(Math.max(0, widths[j]! - width(c)));
      });
      out.push(s);
    }
  };
  const format = (line0: number, line1: number) => {
    const column = widths.length;
    for (let i = line0; i < line1; i++) {
      if (column >= lines[i]!.length - 1) continue;
      writeLines(line0, i);
      line0 = i;
      let w = opts.minWidth;
      for (; i < line1; i++) {
        const cells = lines[i]!;
        if (column >= cells.length - 1) break;
        w = Math.max(w, width(cells[column]!) + opts.padding);
      }
      widths.push(w);
      format(line0, i);
      widths.pop();
      line0 = i;
      i--;
    }
    writeLines(line0, line1);
  };
  format(0, lines.length);
  return out.join('\n') + (hasNewline ? '\n' : '');
}
