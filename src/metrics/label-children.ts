/** A metric's child for one label value, made once (no label hashing per request). */
export function cachedChildren<C>(labels: (value: string) => C): (value: string) => C {
  const children = new Map<string, C>();
  return (value) => {
    let child = children.get(value);
    if (!child) children.set(value, (child = labels(value)));
    return child;
  };
}
