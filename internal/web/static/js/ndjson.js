// NDJSON reading: a turn's answer is one JSON object per line, and network chunks may end
// anywhere, inside a line or inside a multi-byte character.

/** LineSplitter turns decoded text chunks into complete lines. */
export class LineSplitter {
  constructor() {
    this.rest = '';
  }

  /** push takes the next chunk and returns the lines it completed (without "\n" or "\r"). */
  push(chunk) {
    const parts = (this.rest + chunk).split('\n');
    this.rest = parts.pop();
    return parts.map(stripCR).filter((l) => l.trim() !== '');
  }

  /** flush returns the last line when the stream ended without a final "\n". */
  flush() {
    const last = stripCR(this.rest);
    this.rest = '';
    return last.trim() === '' ? [] : [last];
  }
}

function stripCR(line) {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}

/**
 * readLines reads an NDJSON body and calls onLine with each parsed object. A UTF-8 decoder in
 * streaming mode keeps a character split across chunks whole. A line that is not a JSON object
 * throws a SyntaxError: the stream is then not what the contract promises.
 */
export async function readLines(body, onLine) {
  const reader = body.getReader();
  const decoder = new TextDecoder('utf-8');
  const splitter = new LineSplitter();
  const emit = (lines) => {
    for (const line of lines) {
      const obj = JSON.parse(line);
      if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new SyntaxError('an NDJSON line is not a JSON object');
      onLine(obj);
    }
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      emit(splitter.push(decoder.decode(value, { stream: true })));
    }
    emit(splitter.push(decoder.decode()));
    emit(splitter.flush());
  } catch (err) {
    // Stop the download: nothing more of this body will be read.
    reader.cancel().catch(() => {});
    throw err;
  }
}
