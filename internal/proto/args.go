package proto

// split cuts line into blank-separated fields without allocating. It
// returns -1 when there are more fields than fit.
func (p *Parser) split(line []byte) int {
	n, start := 0, -1
	for i, b := range line {
		if b == ' ' || b == '\t' {
			if start >= 0 {
				if n == len(p.fields) {
					return -1
				}
				p.fields[n] = line[start:i]
				n++
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		if n == len(p.fields) {
			return -1
		}
		p.fields[n] = line[start:]
		n++
	}
	return n
}

// parseSize parses a non-negative decimal; -1 if invalid or too large.
func parseSize(d []byte) int {
	if len(d) == 0 || len(d) > 10 {
		return -1
	}
	n := 0
	for _, c := range d {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func (p *Parser) pubArgs(line []byte) error {
	n := p.split(line)
	p.reply = nil
	p.hdr = -1
	switch {
	case p.op == opPub && n == 2:
		p.subject, p.size = p.fields[0], parseSize(p.fields[1])
	case p.op == opPub && n == 3:
		p.subject, p.reply, p.size = p.fields[0], p.fields[1], parseSize(p.fields[2])
	case p.op == opHPub && n == 3:
		p.subject, p.hdr, p.size = p.fields[0], parseSize(p.fields[1]), parseSize(p.fields[2])
	case p.op == opHPub && n == 4:
		p.subject, p.reply = p.fields[0], p.fields[1]
		p.hdr, p.size = parseSize(p.fields[2]), parseSize(p.fields[3])
	default:
		return ErrBadArgs
	}
	if p.size < 0 || (p.op == opHPub && (p.hdr < 0 || p.hdr > p.size)) {
		return ErrBadArgs
	}
	if p.MaxPayload > 0 && p.size > p.MaxPayload {
		return ErrMaxPayload
	}
	return nil
}

func (p *Parser) subArgs(line []byte) error {
	switch p.split(line) {
	case 2:
		return p.h.ProcessSub(p.fields[0], nil, p.fields[1])
	case 3:
		return p.h.ProcessSub(p.fields[0], p.fields[1], p.fields[2])
	}
	return ErrBadArgs
}

func (p *Parser) unsubArgs(line []byte) error {
	switch p.split(line) {
	case 1:
		return p.h.ProcessUnsub(p.fields[0], 0)
	case 2:
		max := parseSize(p.fields[1])
		if max < 0 {
			return ErrBadArgs
		}
		return p.h.ProcessUnsub(p.fields[0], int64(max))
	}
	return ErrBadArgs
}

// startPayload begins reading the payload at buf[start]. When the whole
// payload and its CRLF are in buf it is dispatched straight from buf;
// otherwise what is there is copied. It returns the last index consumed.
func (p *Parser) startPayload(buf []byte, start int) int {
	avail := len(buf) - start
	if avail >= p.size+2 {
		end := start + p.size
		if buf[end] == '\r' && buf[end+1] == '\n' {
			p.ref, p.owned = buf[start:end], false
			p.state = stPayloadLF
			return end // the loop checks the '\n' at end+1 and dispatches
		}
	}
	p.keepPubArgs()
	if cap(p.msgBuf) < p.size || cap(p.msgBuf) > 64*1024 && p.size <= 64*1024 {
		p.msgBuf = make([]byte, 0, p.size)
	}
	p.msgBuf, p.owned = p.msgBuf[:0], true
	if p.size == 0 {
		p.state = stPayloadCR
		return start - 1
	}
	return p.payload(buf, start)
}

// keepPubArgs copies subject and reply so they survive the end of Parse.
func (p *Parser) keepPubArgs() {
	p.pubOwn = append(append(p.pubOwn[:0], p.subject...), p.reply...)
	p.subject = p.pubOwn[:len(p.subject)]
	if p.reply != nil {
		p.reply = p.pubOwn[len(p.subject):]
	}
}

// payload appends payload bytes from buf[i:] and returns the last index used.
func (p *Parser) payload(buf []byte, i int) int {
	need := p.size - len(p.msgBuf)
	take := len(buf) - i
	if take > need {
		take = need
	}
	p.msgBuf = append(p.msgBuf, buf[i:i+take]...)
	if len(p.msgBuf) == p.size {
		p.state = stPayloadCR
	} else {
		p.state = stPayload
	}
	return i + take - 1
}

func (p *Parser) dispatchPub() error {
	p.state = stOpStart
	msg := p.ref
	if p.owned {
		msg = p.msgBuf
	}
	p.ref = nil
	return p.h.ProcessPub(p.subject, p.reply, p.hdr, msg)
}
