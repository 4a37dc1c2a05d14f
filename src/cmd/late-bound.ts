/**
 * A reference set once, after the object that reads it was made: the wiring's answer to a cycle
 * between two parts (the kubelet admits pods through the eviction manager, which asks the kubelet
 * for its pods). Reading it before it is set is a wiring bug, so get() throws rather than guess.
 */
export class LateBound<T> {
  private value: T | undefined;
  private bound = false;

  constructor(private readonly what: string) {}

  set(value: T): void {
    if (this.bound) throw new Error(`${this.what} is already bound`);
    this.value = value;
    this.bound = true;
  }

  get(): T {
    if (!this.bound) throw new Error(`${this.what} is used before it exists`);
    return this.value as T;
  }
}
