// Intrusive doubly-linked list: no allocation, O(1) unlink.
#pragma once
#include <cassert>
#include <cstddef>

namespace rdmx {

struct ListNode {
    ListNode *prev = nullptr;
    ListNode *next = nullptr;
    bool linked() const { return next != nullptr; }
};

class List {
public:
    List() { head_.prev = head_.next = &head_; }
    List(const List &) = delete;
    List &operator=(const List &) = delete;
    // Only empty lists move (containers being sized before use).
    List(List &&o) noexcept : List() { (void)o; }
    bool empty() const { return head_.next == &head_; }
    ListNode *first() const { return empty() ? nullptr : head_.next; }
    ListNode *next_of(const ListNode *n) const { return n->next == &head_ ? nullptr : n->next; }
    void push_back(ListNode *n) {
        n->prev = head_.prev;
        n->next = &head_;
        head_.prev->next = n;
        head_.prev = n;
    }
    void push_front(ListNode *n) {
        n->next = head_.next;
        n->prev = &head_;
        head_.next->prev = n;
        head_.next = n;
    }
    static void unlink(ListNode *n) {
        n->prev->next = n->next;
        n->next->prev = n->prev;
        n->prev = n->next = nullptr;
    }
    ListNode *pop_front() {
        ListNode *n = first();
        if (n != nullptr) unlink(n);
        return n;
    }

private:
    ListNode head_;
};

// Recovers the enclosing object from one of its ListNode members.
template <typename T, ListNode T::*Member>
T *container_of(ListNode *n) {
    if (n == nullptr) return nullptr;
    const size_t off = reinterpret_cast<size_t>(&(static_cast<T *>(nullptr)->*Member));
    return reinterpret_cast<T *>(reinterpret_cast<char *>(n) - off);
}

}  // namespace rdmx
