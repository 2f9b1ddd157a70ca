package coach

// deltaBuffer joins the deltas that one fragment yields, so a fragment becomes at most one delta
// line per text block however many pieces (escape sequences, runs) the contract found in it. A
// lone delta, the common case, passes through as it is.
type deltaBuffer struct {
	first  Event
	n      int
	joined []byte
}

// add buffers a delta, first sending what is buffered when e belongs elsewhere.
func (d *deltaBuffer) add(e Event, send func(Event)) {
	if e.Type != EventDelta {
		d.flush(send)
		send(e)
		return
	}
	if d.n > 0 && (e.Block != d.first.Block || e.BlockType != d.first.BlockType) {
		d.flush(send)
	}
	switch d.n {
	case 0:
		d.first = e
	case 1:
		d.joined = append(append(d.joined[:0], d.first.Text...), e.Text...)
	default:
		d.joined = append(d.joined, e.Text...)
	}
	d.n++
}

// flush sends the buffered delta, if any.
func (d *deltaBuffer) flush(send func(Event)) {
	if d.n > 1 {
		d.first.Text = string(d.joined)
	}
	if d.n > 0 {
		send(d.first)
	}
	d.n = 0
}
