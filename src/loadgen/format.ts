// Number formatting shared by the text and HTML reports.

export const int = (n: number): string => Math.round(n).toLocaleString('en-US');

export const ms = (n: number): string => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));

export const share = (n: number): string => `${Math.round(n * 100)}%`;

export const seconds = (n: number | null): string => (n === null ? '-' : `${n.toFixed(2)} s`);
