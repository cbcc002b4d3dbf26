// Deep C++ abstraction in the style of xalancbmk and omnetpp: a document of
// polymorphic nodes (elements, text, attributes) built through several layers
// of factories, children in std::list, a name index in std::map, names in
// std::string. Every allocation goes through operator new, many of them from
// inside the standard library's templates, so only the outer frames of a
// call stack say which part of the program asked.
//
// usage: cxxabstract DOCUMENTS NODES QUERIES
// prints the nodes made, the query hits and a checksum.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include "../common/bench_util.h"
}

namespace {

class Node {
public:
   explicit Node(std::string name) : name_(std::move(name)) {}
   virtual ~Node() = default;
   virtual uint64_t weigh() const = 0;
   const std::string &name() const { return name_; }

private:
   std::string name_;
};

class Text : public Node {
public:
   Text(std::string name, std::string body) : Node(std::move(name)), body_(std::move(body)) {}
   uint64_t weigh() const override { return body_.size() * 3 + static_cast<unsigned char>(body_[0]); }

private:
   std::string body_;
};

class Attribute : public Node {
public:
   Attribute(std::string name, uint64_t value) : Node(std::move(name)), value_(value) {}
   uint64_t weigh() const override { return value_; }

private:
   uint64_t value_;
};

class Element : public Node {
public:
   using Node::Node;
   void adopt(Node *child) { children_.push_back(child); }
   const std::list<Node *> &children() const { return children_; }
   ~Element() override
   {
      for (Node *c : children_)
         delete c;
   }
   // A query sees only this element and its direct children...
   uint64_t weigh() const override
   {
      uint64_t w = name().size();
      for (const Node *c : children_)
         w += c->name().size();
      return w;
   }
   // ...the final checksum walks everything below.
   uint64_t deep_weigh() const
   {
      uint64_t w = name().size();
      for (const Node *c : children_) {
         auto e = dynamic_cast<const Element *>(c);
         w = w * 31 + (e ? e->deep_weigh() : c->weigh());
      }
      return w;
   }

private:
   std::list<Node *> children_;
};

// Factories three layers deep, as in code that hides construction behind
// interfaces: the document asks its builder, the builder asks a node factory.
class NodeFactory {
public:
   virtual ~NodeFactory() = default;
   virtual Element *element(const std::string &name) { return new Element(name); }
   virtual Text *text(const std::string &name, const std::string &body) { return new Text(name, body); }
   virtual Attribute *attribute(const std::string &name, uint64_t v) { return new Attribute(name, v); }
};

class Builder {
public:
   explicit Builder(NodeFactory &factory, uint64_t seed) : factory_(factory), rng_(seed) {}

   Element *build(long nodes)
   {
      Element *root = factory_.element("root");
      std::vector<Element *> open{root};
      for (long i = 0; i < nodes; i++) {
         Element *parent = open[bench_below(&rng_, open.size())];
         std::string name = "n" + std::to_string(bench_below(&rng_, 5000));
         switch (bench_below(&rng_, 4)) {
         case 0: {
            Element *e = factory_.element(name);
            parent->adopt(e);
            open.push_back(e);
            break;
         }
         case 1:
            parent->adopt(factory_.text(name, std::string(8 + bench_below(&rng_, 40), 'a' + (char)(i % 26))));
            break;
         default:
            parent->adopt(factory_.attribute(name, bench_next(&rng_) >> 40));
         }
      }
      return root;
   }

private:
   NodeFactory &factory_;
   uint64_t rng_;
};

class Document {
public:
   Document(NodeFactory &factory, uint64_t seed, long nodes)
   {
      Builder builder(factory, seed);
      root_.reset(builder.build(nodes));
      index(root_.get());
   }

   // Looks a name up in the index and weighs every node carrying it.
   uint64_t query(const std::string &name) const
   {
      auto found = index_.find(name);
      if (found == index_.end())
         return 0;
      uint64_t w = 0;
      for (const Node *n : found->second)
         w += n->weigh() & 0xffff;
      return w + 1;
   }

   uint64_t weigh() const { return root_->deep_weigh(); }
   size_t names() const { return index_.size(); }

private:
   void index(const Node *n)
   {
      index_[n->name()].push_back(n);
      if (auto e = dynamic_cast<const Element *>(n))
         for (const Node *c : e->children())
            index(c);
   }

   std::unique_ptr<Element> root_;
   std::map<std::string, std::list<const Node *>> index_;
};

}  // namespace

int main(int argc, char **argv)
{
   long documents = bench_arg(argc, argv, 1, 4);
   long nodes = bench_arg(argc, argv, 2, 20000);
   long queries = bench_arg(argc, argv, 3, 20000);
   NodeFactory factory;
   std::vector<std::unique_ptr<Document>> docs;
   uint64_t rng = 2006, sum = 0, hits = 0;

   for (long d = 0; d < documents; d++)
      docs.push_back(std::make_unique<Document>(factory, 100 + (uint64_t)d, nodes));
   for (long q = 0; q < queries; q++) {
      const Document &doc = *docs[bench_below(&rng, docs.size())];
      uint64_t w = doc.query("n" + std::to_string(bench_below(&rng, 6000)));
      hits += w != 0;
      sum = bench_mix(sum, w);
   }
   for (const auto &doc : docs)
      sum = bench_mix(sum, doc->weigh() + doc->names());
   std::printf("nodes %ld query hits %llu\n", documents * nodes, (unsigned long long)hits);
   bench_print_checksum(sum);
   return 0;
}
