package devicehub

// Connected is how many devices have a session with this hub now (gem_devices_connected).
func (h *Hub) Connected() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}
