// The token of a page, kept in sessionStorage: it survives a reload, not the closing of the tab.
/** @param {string} name */
export function tokenStore(name) {
  return {
    get: () => sessionStorage.getItem(name),
    /** @param {string} token */
    set: (token) => sessionStorage.setItem(name, token),
    clear: () => sessionStorage.removeItem(name),
  };
}

/** What a refused token means to a person. @param {{status: number, message: string}} err @param {string} hint */
export function signInMessage(err, hint) {
  if (err.status === 401) return `That token was refused (${err.message}). ${hint}`;
  if (err.status === 403) return `That token is valid but may not do this (${err.message}). ${hint}`;
  return `Could not sign in: ${err.message}`;
}
